"""The spool on its own (search/spool.py): records wait on disk while the sink is down, go out in
order when it answers, survive the process, and a long outage is reported once its grace is over."""

import errno
import json
import os
import time

import pytest

from search.tracking.spool import Spool, Unreachable, records, unsent

QUICK = (0.02, 0.05)  # retry waits of these tests' spools, in seconds


class Flaky:
    """A sink that is down while ``up`` is false; what it took, in order (a record taken twice, twice)."""

    def __init__(self, up: bool = True, refuse: int | None = None) -> None:
        self.up, self.refuse, self.got = up, refuse, []

    def send(self, record: dict) -> None:
        if not self.up:
            raise Unreachable("Connection refused")
        if record["n"] == self.refuse:
            raise ValueError(f"record {record['n']} is malformed")
        self.got.append(record["n"])

    def __str__(self) -> str:
        return "the test's sink"


def wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_records_wait_while_the_sink_is_down_and_go_out_in_order(tmp_path):
    sink = Flaky(up=False)
    spool = Spool(tmp_path / "s.jsonl", sink, retry_s=QUICK)
    started = time.monotonic()
    for n in range(5):
        spool.put({"n": n})
    assert time.monotonic() - started < 0.5  # putting never waits for the sink
    assert wait_until(lambda: spool.outage_s() > 0) and not spool.drain(0.2) and spool.pending() == 5
    sink.up = True
    assert spool.drain(10) and spool.outage_s() == 0
    assert sink.got == [0, 1, 2, 3, 4] and unsent(spool.path) == []
    spool.close()


def test_a_new_spool_sends_what_an_earlier_one_left_first(tmp_path):
    path = tmp_path / "s.jsonl"
    first = Spool(path, Flaky(up=False), retry_s=QUICK)
    for n in range(3):
        first.put({"n": n})
    first.close()  # the driver ends (or dies) with three records unsent
    with open(path, "ab") as f:
        f.write(b'{"n": 99, "half')  # ... and half a fourth, killed mid-write
    sink = Flaky(up=False)
    second = Spool(path, sink, retry_s=QUICK)
    assert second.pending() == 3
    second.put({"n": 3})
    sink.up = True
    assert second.drain(10) and sink.got == [0, 1, 2, 3]
    assert [r["n"] for r in records(path)] == [0, 1, 2, 3]
    second.close()


def test_a_refused_record_is_set_aside_and_the_rest_go_on(tmp_path):
    sink = Flaky(refuse=1)
    spool = Spool(tmp_path / "s.jsonl", sink, retry_s=QUICK)
    for n in range(3):
        spool.put({"n": n})
    assert spool.drain(10) and sink.got == [0, 2]
    assert [json.loads(line)["n"] for line in (tmp_path / "s.jsonl.rejected").read_text().splitlines()] == [1]
    spool.close()


def test_the_grace_period_expires_once_and_stays_expired(tmp_path):
    sink = Flaky(up=False)
    spool = Spool(tmp_path / "s.jsonl", sink, grace_s=0.2, retry_s=QUICK)
    spool.put({"n": 0})
    assert not spool.expired()
    assert wait_until(spool.expired) and spool.last_error == "Connection refused"
    sink.up = True
    assert spool.drain(10) and spool.expired()  # the owner stopped for it: that stays said
    spool.close()


@pytest.mark.parametrize("grace", [0.0, 600.0])
def test_nothing_waits_nothing_expires(tmp_path, grace):
    spool = Spool(tmp_path / "s.jsonl", Flaky(up=False), grace_s=grace, retry_s=QUICK)
    time.sleep(0.1)
    assert spool.drain(0) and not spool.expired()  # an unreachable sink with nothing to send is no outage
    spool.close()


class FullDisk:
    """``os.write`` for one file descriptor that refuses, while ``full``, after writing half of what it got
    (a filling disk writes some bytes of a line, then ENOSPC); every other descriptor writes as usual."""

    def __init__(self, monkeypatch) -> None:
        self.full, self.fd, self._write = False, -1, os.write
        monkeypatch.setattr(os, "write", self)

    def __call__(self, fd: int, data) -> int:
        if fd != self.fd or not self.full:
            return self._write(fd, data)
        self._write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_holds_records_in_memory_in_order_and_leaves_no_torn_line(tmp_path, monkeypatch):
    disk, sink = FullDisk(monkeypatch), Flaky(up=False)
    spool = Spool(tmp_path / "s.jsonl", sink, retry_s=QUICK)
    disk.fd = spool._fd
    spool.put({"n": 0})
    disk.full = True
    for n in (1, 2):
        spool.put({"n": n})  # the disk refuses both: held, nothing raised
    disk.full = False
    spool.put({"n": 3})  # after held lines: held too, or it would go out before them
    assert spool.pending() == 4 and [r["n"] for r in records(spool.path)] == [0]  # no half of line 1
    sink.up = True
    assert spool.drain(10) and sink.got == [0, 1, 2, 3]
    spool.put({"n": 4})  # nothing held any more: to the file again
    assert spool.drain(10) and sink.got == [0, 1, 2, 3, 4] and [r["n"] for r in records(spool.path)] == [0, 4]
    spool.close()


def test_held_records_go_to_disk_at_close_when_it_has_room_again(tmp_path, monkeypatch):
    disk, path = FullDisk(monkeypatch), tmp_path / "s.jsonl"
    first = Spool(path, Flaky(up=False), retry_s=QUICK)
    disk.fd, disk.full = first._fd, True
    for n in range(3):
        first.put({"n": n})
    disk.full = False
    first.close()  # the server never answered; the disk has room now: kept for the next spool
    sink = Flaky()
    second = Spool(path, sink, retry_s=QUICK)
    assert second.drain(10) and sink.got == [0, 1, 2]
    second.close()
