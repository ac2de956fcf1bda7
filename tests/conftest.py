import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MTL_DATA_DIR", ROOT.parent / "shared" / "data")).resolve()
os.environ["MTL_DATA_DIR"] = str(DATA)
os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # tests only: local Ray without tokens


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA / "semeval2014").is_dir():
        pytest.fail(f"datasets not found under MTL_DATA_DIR={DATA}")
    return DATA


@pytest.fixture(scope="session", autouse=True)
def cache_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("token-cache")
    os.environ["MTL_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    from trainables.model import save_tiny_encoder

    return save_tiny_encoder(tmp_path_factory.mktemp("tiny-bert"), "bert")


@pytest.fixture(scope="session")
def tiny_xlnet(tmp_path_factory) -> Path:
    from trainables.model import save_tiny_encoder

    return save_tiny_encoder(tmp_path_factory.mktemp("tiny-xlnet"), "xlnet")


@pytest.fixture(scope="session")
def tiny_winner(tiny_bert, tmp_path_factory):
    """A tiny semeval + pos model trained one epoch: ``(trainer, config, checkpoint file)``."""
    from trainables.config import EncoderConfig, TrainConfig
    from trainables.loop import Trainer

    config = TrainConfig(
        tasks=("semeval", "pos"), primary="semeval", encoder=EncoderConfig(model=str(tiny_bert), max_seq_length=64),
        epochs=1, batch_size=8, lr=1e-3, max_train_examples=50, max_eval_examples=50, evaluate_test=False, seed=1,
    )
    trainer = Trainer(config)
    trainer.run_epoch()
    checkpoint = tmp_path_factory.mktemp("winner") / "checkpoint.pt"
    trainer.save(checkpoint)
    return trainer, config, checkpoint
