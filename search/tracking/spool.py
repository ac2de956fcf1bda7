"""An outbox on disk: the study appends its tracking writes and never waits for the server.

Who calls what: the Tune driver (the tracker callback, the runner) calls :meth:`Spool.put`,
which appends one JSON line to the spool file and returns; one background thread hands the
lines, in file order, to a :class:`Sink`, each after the one before it went through, and keeps
how far it got in a file beside the spool (a byte offset). While the sink raises
:class:`Unreachable` the lines wait on disk and the thread retries with back-off; when the
sink answers again they go out in order. A spool opened on a file an earlier process left
(``--resume``) sends that process's unsent lines first.

Delivery is at least once: a line sent just before a crash, but not yet counted, is sent
again, so a sink's effects must be safe to repeat. The file keeps every line (a study writes
about a kilobyte per trial epoch): it is the record of what was sent, and in what order.

A full disk loses nothing while the process lives: a line the file refuses (ENOSPC, a quota)
is held in memory, after the file's lines, and sent from there; lines keep going to memory until
those are sent, so the order holds. Held lines are not in the file. At :meth:`Spool.close` the
unsent ones are tried on disk once more; only if the disk still refuses them and the sink did not
take them are they lost, and the log says how many.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)


RETRY_S = (1.0, 10.0)  # first and longest wait between two tries of an unreachable sink


class Unreachable(Exception):
    """The sink cannot take a record now (server down, timeout): the spool tries again later."""


class Sink(Protocol):
    """Where records go; ``str(sink)`` names it in the spool's log lines."""

    def send(self, record: dict[str, Any]) -> None:
        """Deliver one record. Raise :class:`Unreachable` to have it sent again later; any other
        error refuses it for good (logged, kept in the ``.rejected`` file, the next one goes on)."""


class Spool:
    """Records for one sink, sent in order by a background thread (see the module docstring).

    ``grace_s``: how long the sink may stay unreachable while records wait, before
    :meth:`expired` says the owner should stop producing them."""

    def __init__(self, path: str | Path, sink: Sink, grace_s: float = 600.0, retry_s: tuple[float, float] = RETRY_S):
        self.path, self.sink, self.grace_s, self.retry_s = Path(path), sink, grace_s, retry_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._offset_file = self.path.with_name(self.path.name + ".sent")
        self._rejected = self.path.with_name(self.path.name + ".rejected")
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._down_since: float | None = None  # monotonic time of the first failed try of the current streak
        self.last_error = ""
        self.gave_up = False
        self._size = self._drop_torn_line()
        self._sent = self._read_offset()
        self._pending = self._count_lines(self._sent)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._held: deque[bytes] = deque()  # lines the disk refused, after the file's (module docstring)
        self.write_error = ""  # why the disk last refused a line
        self._thread = threading.Thread(target=self._send_loop, name=f"spool:{self.path.name}", daemon=True)
        self._thread.start()

    # -- the producer's side ------------------------------------------------------
    def put(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        with self._cond:
            if not self._held and self._append(line):  # in the OS's hands: a crash loses nothing
                self._size += len(line)
            else:
                if not self._held:
                    logger.warning(
                        "cannot write %s (%s): tracking records held in memory until sent", self.path, self.write_error
                    )
                self._held.append(line)
            self._pending += 1
            self._cond.notify_all()

    def pending(self) -> int:
        """Records not yet sent."""
        with self._cond:
            return self._pending

    def outage_s(self) -> float:
        """Seconds the sink has been unreachable with records waiting (0 while they go through)."""
        with self._cond:
            return 0.0 if self._down_since is None else time.monotonic() - self._down_since

    def expired(self) -> bool:
        """Whether the sink has been unreachable past the grace period; once it says so,
        :attr:`gave_up` stays set (the owner stopped for this reason, even if the sink returns)."""
        if self.outage_s() > self.grace_s:
            self.gave_up = True
        return self.gave_up

    def drain(self, timeout: float) -> bool:
        """Wait until every record is sent, or ``timeout`` seconds; whether all went out."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            while self._pending and not self._closed.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 1.0))
            return not self._pending

    def close(self) -> None:
        """Stop the sender (what it has not sent stays in the file for the next spool)."""
        self._closed.set()
        with self._cond:
            self._cond.notify_all()
        self._thread.join(timeout=5)
        with self._cond:
            while self._held and self._append(self._held[0]):  # kept for the next spool after all
                self._size += len(self._held.popleft())
            if self._held:
                logger.error(
                    "%d tracking records lost: %s refused them (%s) and %s did not take them in time",
                    len(self._held),
                    self.path,
                    self.write_error,
                    self.sink,
                )
        os.close(self._fd)

    # -- the sender thread ----------------------------------------------------------
    def _send_loop(self) -> None:
        wait = self.retry_s[0]
        with open(self.path, "rb") as reader:
            while True:
                with self._cond:
                    while not self._pending and not self._closed.is_set():
                        self._cond.wait()
                    if self._closed.is_set():
                        return
                    from_file = self._sent < self._size
                    if from_file:
                        reader.seek(self._sent)
                        line = reader.readline()
                    else:
                        line = self._held[0]
                try:
                    self.sink.send(json.loads(line))
                except Unreachable as exc:
                    with self._cond:
                        if self._down_since is None:
                            self._down_since = time.monotonic()
                            logger.warning(
                                "%s unreachable (%s): records wait in %s, sent when it answers (given up after %g s)",
                                self.sink,
                                exc,
                                self.path,
                                self.grace_s,
                            )
                        self.last_error = str(exc)
                    if self._closed.wait(wait):
                        return
                    wait = min(2 * wait, self.retry_s[1])
                    continue
                except Exception as exc:  # refused for good: keep it aside, do not block the rest
                    logger.error(
                        "tracking record refused, kept in %s: %s", self._rejected, str(exc).splitlines()[0][:300]
                    )
                    try:
                        with open(self._rejected, "ab") as f:
                            f.write(line)
                    except OSError as err:
                        logger.error("cannot keep the refused record in %s (%s): %s", self._rejected, err, line[:300])
                wait = self.retry_s[0]
                self._went(line, from_file)

    def _went(self, line: bytes, from_file: bool) -> None:
        """Count one line as sent (in the offset file, or off the held ones)."""
        with self._cond:
            if self._down_since is not None:
                logger.info(
                    "%s answers again after %.0f s: sending the %d records that waited",
                    self.sink,
                    time.monotonic() - self._down_since,
                    self._pending,
                )
            if from_file:
                self._sent += len(line)
                self._write_offset(self._sent)
            else:
                self._held.popleft()
            self._pending -= 1
            self._down_since = None
            self._cond.notify_all()

    # -- the file -------------------------------------------------------------------
    def _drop_torn_line(self) -> int:
        """A process killed mid-write leaves half a line at the end: cut it (it was never put)."""
        if not self.path.exists():
            return 0
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        if keep != len(data):
            with open(self.path, "r+b") as f:
                f.truncate(keep)
        return keep

    def _append(self, line: bytes) -> bool:
        """Append one line to the file; whether it is there whole (a refused write leaves no part of it)."""
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view) :]
            return True
        except OSError as exc:
            self.write_error = str(exc)
            try:
                os.ftruncate(self._fd, self._size)  # half a line would hide every line after it
            except OSError:
                pass
            return False

    def _read_offset(self) -> int:
        try:
            sent = int(self._offset_file.read_text().strip() or 0)
        except (OSError, ValueError):
            sent = 0
        return sent if 0 <= sent <= self._size else 0

    def _write_offset(self, sent: int) -> None:
        tmp = self._offset_file.with_name(self._offset_file.name + ".tmp")
        try:
            tmp.write_text(str(sent))
            os.replace(tmp, self._offset_file)
        except OSError:  # a full disk: the next spool sends these lines again (at least once, safe to repeat)
            pass

    def _count_lines(self, start: int) -> int:
        if not self.path.exists():
            return 0
        with open(self.path, "rb") as f:
            f.seek(start)
            return sum(1 for _ in f)


def records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a spool file, sent or not, in order."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]


def unsent(path: str | Path) -> list[dict[str, Any]]:
    """The records of a spool file its sender has not counted as sent."""
    path = Path(path)
    offset_file = path.with_name(path.name + ".sent")
    sent = int(offset_file.read_text().strip() or 0) if offset_file.exists() else 0
    data = path.read_bytes() if path.exists() else b""
    return [json.loads(line) for line in data[sent:].splitlines(keepends=True) if line.endswith(b"\n")]
