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
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
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
        self._writer = open(self.path, "ab")
        self._thread = threading.Thread(target=self._send_loop, name=f"spool:{self.path.name}", daemon=True)
        self._thread.start()

    # -- the producer's side ------------------------------------------------------
    def put(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        with self._cond:
            self._writer.write(line)
            self._writer.flush()  # in the OS's hands: a crash of this process loses nothing
            self._size += len(line)
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
        self._writer.close()

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
                    reader.seek(self._sent)
                    line = reader.readline()
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
                    with open(self._rejected, "ab") as f:
                        f.write(line)
                wait = self.retry_s[0]
                with self._cond:
                    if self._down_since is not None:
                        logger.info(
                            "%s answers again after %.0f s: sending the %d records that waited",
                            self.sink,
                            time.monotonic() - self._down_since,
                            self._pending,
                        )
                    self._sent += len(line)
                    self._pending -= 1
                    self._down_since = None
                    self._write_offset(self._sent)
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

    def _read_offset(self) -> int:
        try:
            sent = int(self._offset_file.read_text().strip() or 0)
        except (OSError, ValueError):
            sent = 0
        return sent if 0 <= sent <= self._size else 0

    def _write_offset(self, sent: int) -> None:
        tmp = self._offset_file.with_name(self._offset_file.name + ".tmp")
        tmp.write_text(str(sent))
        os.replace(tmp, self._offset_file)

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
