"""The copies that grow a real study to the size ``benchmarks.report_scale`` reads: each its own trial."""

import pytest

from benchmarks.report_scale import copies, parse


def spool(trials: int) -> list[dict]:
    """A study's spool as the tracker writes it: the study run's line, each trial's start, result and end, and a
    final seed's run (finalize's, not copied)."""
    records = [{"op": "log", "trial": None, "metrics": []}]
    for n in range(trials):
        tags = {"trial_id": f"id{n}", "kind": "trial", "trial": str(n), "canonical_key": f"k{n}"}
        tags["baseline"] = "true" if n == 0 else "false"
        records.append({"op": "start", "trial": f"id{n}", "name": f"t{n:02d} sst2 sqrt", "tags": tags})
        records.append({"op": "log", "trial": f"id{n}", "metrics": [], "tags": {"epochs_trained": "1"}})
        records.append({"op": "end", "trial": f"id{n}", "state": "FINISHED", "tags": {"status": "completed"}})
    final = {"trial_id": "f0", "kind": "final", "trial": "0"}
    records += [{"op": "start", "trial": "f0", "name": "final", "tags": final}, {"op": "end", "trial": "f0"}]
    return records


def test_copies_grow_the_study_to_its_size_each_copy_its_own_trial():
    added = copies(spool(3), 8)
    starts = [r for r in added if r["op"] == "start"]
    assert [r["tags"]["trial"] for r in starts] == ["3", "4", "5", "6", "7"]  # 3 originals + 5 copies = 8
    assert len({r["trial"] for r in added}) == 5 and all(r["tags"]["trial_id"] == r["trial"] for r in starts)
    assert len({r["tags"]["canonical_key"] for r in starts}) == 5
    assert all(r["tags"]["baseline"] == "false" for r in starts)  # a study has one baseline
    assert starts[0]["name"] == "t00003 sst2 sqrt"
    assert {r["trial"] for r in added if r["op"] == "end"} == {r["trial"] for r in starts}  # no orphan records
    assert not any(r["trial"].startswith("f0") for r in added)  # finalize's runs are not the search's


def test_a_study_smaller_than_its_seed_is_refused():
    assert copies(spool(3), 3) == []
    with pytest.raises(SystemExit):
        parse(["--trials", "100", "--seed-trials", "300"])
