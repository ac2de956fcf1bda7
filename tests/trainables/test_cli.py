import logging

import pytest

from trainables.cli import MaskCredentials, fail, mask_credentials


def test_passwords_in_urls_are_masked_wherever_they_appear():
    assert mask_credentials("--optuna-storage postgresql://me:s3cr%40t@db:5432/optuna: refused") == (
        "--optuna-storage postgresql://me:***@db:5432/optuna: refused")
    assert mask_credentials("http://u:p@h:5000 and s3://bucket/x and sqlite:////tmp/a.db") == (
        "http://u:***@h:5000 and s3://bucket/x and sqlite:////tmp/a.db")
    assert mask_credentials("http://host:5000/path") == "http://host:5000/path"  # a port is no password


def test_logs_and_errors_never_print_the_password(capsys, caplog):
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "storage %s down", ("mysql://a:pw@h/db",), None)
    assert MaskCredentials().filter(record) and record.getMessage() == "storage mysql://a:***@h/db down"
    with pytest.raises(SystemExit) as exit:
        fail("--tracking-uri https://bob:hunter2@mlflow.example: unreachable")
    assert exit.value.code == 2 and "hunter2" not in capsys.readouterr().err
