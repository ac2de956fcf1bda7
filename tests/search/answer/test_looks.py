"""The looks recorded on a study's run: read back in order, never overwritten, the plan fixed by the first."""

import json

import pytest

from search.answer.looks import (
    MAX_SEEDS_TAG,
    check_seeds,
    design_of,
    earlier_looks,
    pairs_before,
    record_look,
)
from trainables.config import ConfigError


class Client:
    """The one MLflow call the looks make: set_tag."""

    def __init__(self):
        self.tags = {}

    def set_tag(self, run_id, key, value):
        self.tags[key] = value


def look(seeds, pairs, verdict="no significant difference"):
    return {"seeds": seeds, "claims": {"tuned": {"pairs": pairs, "verdict": verdict}}}


def test_looks_are_recorded_once_each_and_read_in_order():
    client = Client()
    design = design_of({}, None, 5)
    assert design.max_seeds == 10
    record_look(client, "run", [], look(5, 5), design)
    record_look(client, "run", earlier_looks(client.tags), look(5, 5), design)  # the same look again: no new tag
    record_look(client, "run", earlier_looks(client.tags), look(10, 9, "better"), design)
    looks = earlier_looks({**client.tags, "other": "x"})
    assert [x["seeds"] for x in looks] == [5, 10] and client.tags[MAX_SEEDS_TAG] == "10"
    assert json.loads(client.tags["final_look_1"])["claims"]["tuned"]["verdict"] == "no significant difference"
    assert pairs_before(looks, "tuned", 10) == [5] and pairs_before(looks, "ablation", 10) == []


def test_the_plan_and_the_seeds_cannot_go_back():
    tags = {MAX_SEEDS_TAG: "12"}
    assert design_of(tags, None, 5).max_seeds == 12 and design_of(tags, 12, 5).max_seeds == 12
    with pytest.raises(ConfigError, match="first look planned 12"):
        design_of(tags, 20, 5)
    check_seeds([look(5, 5)], 5)
    with pytest.raises(ConfigError, match="looked at 5 seeds"):
        check_seeds([look(5, 5)], 3)


@pytest.mark.parametrize("margin", [0.0, -0.01])
def test_a_margin_that_is_no_gain_is_refused_in_one_line(margin):
    from search.answer.config import FinalizeConfig

    with pytest.raises(ConfigError, match=rf"--margin {margin}: expected a gain > 0 in the objective's units"):
        FinalizeConfig("absa", margin=margin)
    assert FinalizeConfig("absa", margin=0.01).margin == 0.01
