"""Shared CLI plumbing: one-line errors, output paths checked up front, atomic file output."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

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


def umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it to read it)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):  # not Linux, or a kernel before 4.7
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """Write ``path`` via a temporary file beside it, renamed over it once complete, so a crash never
    leaves half a file. The file's mode is what ``open`` would give it (an existing file's, else
    0666 less the umask), not ``mkstemp``'s 0600; errors name ``path``, not the temporary file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        os.fchmod(fd, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~umask())
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def write_json(path: str | Path, value: Any) -> None:
    """Write ``value`` to ``path`` atomically (:func:`atomic_write`)."""
    with atomic_write(path) as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def check_writable(path: str | Path, flag: str) -> None:
    """Fail before the work, not after it, when ``path`` cannot be written (by trying: root passes
    permission checks even on /proc)."""
    path = Path(path)
    if path.is_dir():
        raise OSError(f"{flag} {path}: is a folder, expected a file name")
    folder = path.resolve().parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise OSError(f"{flag} {path}: cannot write in {existing} ({exc.strerror})") from None


def default_cache_dir() -> Path:
    """The project's cache: encodings, spools, logs, the last study's stores (``MTL_CACHE_DIR``)."""
    return Path(os.environ.get("MTL_CACHE_DIR", Path.home() / ".cache" / "mtl-search"))


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
    except KeyboardInterrupt as exc:
        fail(str(exc) or "interrupted", 130)
    raise SystemExit(code or 0)
