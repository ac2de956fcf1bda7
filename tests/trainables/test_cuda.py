"""The CUDA path: skipped without a GPU; ``python -m benchmarks.gpu_check`` runs these on one.

No GPU was lent to the sessions that wrote them, so they have not run yet: a failure here on
the first GPU is a finding about the code, or about the test, to be read either way.
"""

import contextlib
import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, strip_timing, tiny_config

from trainables.loop import Trainer, train

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="no CUDA device: these run on a GPU machine, with python -m benchmarks.gpu_check",
    ),
]


def cuda_config(model, **kw):
    return tiny_config(
        model, **{"device": "cuda", "max_train_examples": 64, "max_eval_examples": 32, "evaluate_test": False, **kw}
    )


@contextlib.contextmanager
def sync_debug(mode: str):
    torch.cuda.set_sync_debug_mode(mode)
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


def precisions():
    bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
    return ["fp32", "fp16"] + (["bf16"] if bf16 else [])


@pytest.mark.parametrize("precision", precisions())
def test_training_steps_never_wait_for_the_gpu(tiny_bert, precision):
    """Between the loop's periodic checks, forward, backward, clipping, (fused) AdamW, the fp16
    scaler and the schedule queue work without a host sync."""
    trainer = Trainer(cuda_config(tiny_bert, tasks=("sst2", "pos"), primary="sst2", precision=precision))
    trainer.model.train()
    draws = list(trainer.draws(0, 6))  # collated and pinned beforehand
    trainer.backward(*draws[0])  # the first step's one-time set-up (cuBLAS, optimizer state) may sync
    trainer.optimizer_step()
    torch.cuda.synchronize()
    with sync_debug("error"):
        for t, batch in draws[1:]:
            trainer.backward(t, batch)
            trainer.optimizer_step()
    torch.cuda.synchronize()


def test_the_sync_check_catches_the_2d_mask_read(tiny_bert):
    """What the 4-D mask avoids: from a 2-D mask transformers reads padding_mask.all() on the host."""
    trainer = Trainer(cuda_config(tiny_bert, tasks=("sst2",), primary="sst2"))
    trainer.model.prebuilt_mask = False
    t, batch = next(trainer.draws(0, 1))
    trainer.backward(t, batch)
    with sync_debug("error"), pytest.raises(RuntimeError, match="synchroniz"):
        trainer.backward(t, batch)


@pytest.mark.parametrize("precision", precisions()[1:])
def test_resume_on_cuda_matches_within_tolerance(tiny_bert, tmp_path, precision):
    """Not bit for bit (CUDA kernels are not deterministic), but the same run."""
    config = cuda_config(tiny_bert, precision=precision, epochs=2)
    straight = strip_timing(train(config))
    first = Trainer(config)
    resumed = [first.run_epoch()]
    first.save(tmp_path / "ckpt.pt")
    assert isinstance(torch.load(tmp_path / "ckpt.pt", weights_only=True)["cuda_rng"], torch.Tensor)  # one device's
    second = Trainer(config)
    second.load(tmp_path / "ckpt.pt")
    resumed.append(second.run_epoch())
    for a, b in zip(straight, strip_timing(resumed)):
        assert a.keys() == b.keys()
        for key in a:
            if key.startswith("sampling/"):  # drawn on the host: exact
                assert b[key] == a[key], key
            elif key.endswith("loss"):
                assert b[key] == pytest.approx(a[key], rel=0.02), key
            else:
                assert b[key] == pytest.approx(a[key], abs=0.25), key


def test_a_checkpoint_with_every_gpus_rng_state_resumes_on_one(tiny_bert, tmp_path):
    config = cuda_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=2)
    first = Trainer(config)
    first.run_epoch()
    state = first.state_dict()
    state["cuda_rng"] = [first.cuda_rng] + [torch.zeros_like(first.cuda_rng)] * 7  # as written on 8 GPUs before
    torch.save(state, tmp_path / "old.pt")
    second = Trainer(config)
    second.load(tmp_path / "old.pt")
    assert torch.equal(second.cuda_rng, first.cuda_rng)
    second.run_epoch()


def test_a_cpu_checkpoint_resumes_on_the_gpu_with_fused_adamw(tiny_bert, tmp_path):
    cpu = Trainer(cuda_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=2, device="cpu", precision="fp32"))
    cpu.run_epoch()
    cpu.save(tmp_path / "cpu.pt")
    gpu = Trainer(cuda_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=2, precision="fp32"))
    gpu.load(tmp_path / "cpu.pt")
    assert all(group["fused"] for group in gpu.optimizer.param_groups)
    steps = [s["step"] for s in gpu.optimizer.state.values()]
    assert steps and all(s.device.type == "cuda" for s in steps)  # where fused AdamW keeps them
    gpu.run_epoch()


def test_a_cpu_run_on_a_gpu_machine_creates_no_cuda_context(tiny_bert):
    code = (
        "import torch\n"
        "from conftest import tiny_config\n"
        "from trainables.loop import Trainer\n"
        f"t = Trainer(tiny_config({str(tiny_bert)!r}, tasks=('sst2',), primary='sst2', epochs=1, device='cpu',"
        " max_train_examples=16, max_eval_examples=16, evaluate_test=False))\n"
        "t.run_epoch()\n"
        "t.state_dict()\n"
        "print(torch.cuda.is_initialized())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_compile_never_guards_on_the_task(tiny_bert):
    """The encoder is compiled, not the model: no graph is keyed on the task name, and the
    three tasks stay within Dynamo's recompile limit (past it, it would silently run eager)."""
    import torch._dynamo
    from torch._dynamo.utils import counters, guard_failures

    torch._dynamo.reset()
    counters.clear()
    guard_failures.clear()
    trainer = Trainer(cuda_config(tiny_bert, tasks=("sst2", "semeval", "pos"), compile=True, epochs=1))
    losses, tasks = trainer.train_steps(0, 24)
    assert len(set(tasks.tolist())) == 3 and all(loss == loss for loss in losses)
    reasons = [str(r) for failures in guard_failures.values() for r in failures]
    assert not any("task" in r for r in reasons), reasons
    limit = getattr(torch._dynamo.config, "recompile_limit", 8)
    assert counters["stats"]["unique_graphs"] <= limit
