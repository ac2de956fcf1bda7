"""Shared CLI plumbing: one-line errors and atomic JSON output."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, NoReturn


# "scheme://user:password@host": the password part
CREDENTIALS = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/:@\s]*):(?P<secret>[^@\s/]+)@")


def mask_credentials(text: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db``, anywhere in ``text``."""
    return CREDENTIALS.sub(lambda m: f"{m['head']}:***@", str(text))


class MaskCredentials(logging.Filter):
    """Log records never carry a password that sat in a URL (storage URLs, tracking URIs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_credentials(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def fail(message: str, code: int = 2) -> NoReturn:
    print(f"error: {mask_credentials(message)}", file=sys.stderr)
    raise SystemExit(code)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one ``error: ...`` line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)")


def write_json(path: str | Path, value: Any) -> None:
    """Write ``value`` to ``path`` via a temporary file, so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, MaskCredentials) for f in handler.filters):
            handler.addFilter(MaskCredentials())
    # transformers' weight-loading progress bars add nothing to our own progress lines
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass


def run_main(main: Callable[[], int | None], expected: tuple[type[BaseException], ...]) -> NoReturn:
    """Run ``main``; the ``expected`` errors (bad input) become one line and exit code 2."""
    try:
        code = main()
    except expected as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    raise SystemExit(code or 0)
