"""The one-command GPU check, on the CPU: its stages' logic, and the JSON it writes."""

import json

import pytest
import torch

from benchmarks import gpu_check


def test_resume_check_finds_a_cpu_resume_exact(tiny_bert, data_dir, tmp_path):
    args = gpu_check.parse_args(["--device", "cpu", "--model", str(tiny_bert)])
    result = gpu_check.resume_check(gpu_check.training_config(args, "fp32"), tmp_path)
    assert result["status"] == "passed"
    assert result["max_abs_diff_resumed_vs_straight"] == 0.0  # bit for bit on the CPU
    assert result["max_abs_diff_rerun_vs_straight"] == 0.0


def test_a_cpu_smoke_run_writes_one_json_with_every_stage(tiny_bert, data_dir, tmp_path):
    out = tmp_path / "check.json"
    code = gpu_check.main(
        ["--device", "cpu", "--stages", "training,sync", "--model", str(tiny_bert), "--out", str(out)]
    )
    report = json.loads(out.read_text())
    assert code == 0 and report["device"] == "cpu" and report["status"] == "passed"
    assert report["stages"]["training"]["status"] == "passed"
    assert report["stages"]["sync"] == {
        "status": "skipped",
        "reason": "no CUDA device",
        "seconds": pytest.approx(0, abs=5),
    }


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible")
def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path, capsys):
    assert gpu_check.main(["--out", str(tmp_path / "check.json")]) == 2
    assert "no CUDA device" in capsys.readouterr().out and not (tmp_path / "check.json").exists()


def test_junit_outcomes_and_the_worst_status(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="t" name="a"/>'
        '<testcase classname="t" name="b"><skipped message="no CUDA device"/></testcase>'
        '<testcase classname="t" name="c"><failure message="boom"/></testcase></testsuite></testsuites>'
    )
    assert gpu_check.junit_outcomes(junit) == {
        "t::a": "passed",
        "t::b": "skipped: no CUDA device",
        "t::c": "failed: boom",
    }
    assert gpu_check.worst(["skipped", "passed"]) == "passed"
    assert gpu_check.worst(["skipped"]) == "skipped"
    assert gpu_check.worst(["passed", "failed", "skipped"]) == "failed"
