"""Evaluation ids and report files: item keys carry the item's content (E10), joined ids never collide (E11),
and a rerun with other settings keeps the earlier report (E12)."""

from __future__ import annotations

import json

from mimesis_pl.eval.simulator.realusersim.data import realusersim_case_id
from mimesis_pl.eval.simulator.suite import item_ref, suite_settings, write_suite_files
from mimesis_pl.eval.simulator.tau_usi.data import TauTask
from mimesis_pl.eval.simulator.turing.data import TuringRow
from mimesis_pl.eval.trials import RunIdentity, TrialRecord, join_id

IDENTITY = RunIdentity("sim", "rev", "judge=x")


def _turing(user: str, post: str, target: int, truth: str = "hi") -> TuringRow:
    return TuringRow(user, post, target, ({"role": "user", "content": "q"},), truth, "history", "ctx")


def test_joined_ids_do_not_collide():
    assert join_id("u/1", "p") != join_id("u", "1/p")
    assert join_id("a%2Fb") != join_id("a/b")
    assert _turing("u/1", "p", 0).key != _turing("u", "1/p", 0).key
    assert realusersim_case_id("a-b", "c") != realusersim_case_id("a", "b-c")
    assert realusersim_case_id("ecommerce", "7") == "ecommerce-7"  # real split names keep the reference's id


def test_item_keys_carry_the_item_content():
    row, edited = _turing("u", "p", 0), _turing("u", "p", 0, truth="an edited human turn")
    a = item_ref("turing/generate", row.key, 0, "h", content=row)
    b = item_ref("turing/generate", edited.key, 0, "h", content=edited)
    assert a.task_id == b.task_id and a.key(IDENTITY, 0).digest != b.key(IDENTITY, 0).digest
    task = TauTask("retail", 1, "cancel order #W1")
    other = TauTask("retail", 1, "cancel order #W2")
    assert (
        item_ref("t", task.instance_id, 0, "h", content=task).content_hash
        != item_ref("t", other.instance_id, 0, "h", content=other).content_hash
    )
    # A record written before keys carried content still loads (it is simply never reused).
    old = TrialRecord(key=IDENTITY.key("g", "h", "t", 0), status="scored", reward=1.0).to_dict()
    old["key"].pop("content_hash")
    assert TrialRecord.from_dict(old).key.content_hash == ""


class _Suite:
    def __init__(self, seeds):
        self.seeds, self.judge = seeds, {"model": "j", "url": "http://x/v1"}
        self._cache = object()


def test_a_rerun_with_other_settings_keeps_the_earlier_report(tmp_path):
    first, second = suite_settings(_Suite([0, 1])), suite_settings(_Suite([0]))
    assert first == {"judge": {"model": "j", "url": "http://x/v1"}, "seeds": [0, 1]}  # private state left out
    write_suite_files(tmp_path, {"score": 1.0}, "# one\n", first)
    write_suite_files(tmp_path, {"score": 2.0}, "# two\n", second)
    latest = json.loads((tmp_path / "results.json").read_text())
    assert latest["score"] == 2.0 and latest["settings"] == second
    kept = json.loads(
        (
            tmp_path / "results-{}.json".format(json.loads((tmp_path / "results.json").read_text())["settings_hash"])
        ).read_text()
    )
    assert kept["score"] == 2.0
    earlier = [
        json.loads(p.read_text()) for p in tmp_path.glob("results-*.json") if json.loads(p.read_text())["score"] == 1.0
    ]
    assert len(earlier) == 1 and earlier[0]["settings"] == first
    assert len(list(tmp_path.glob("results-*.md"))) == 2
    assert (tmp_path / "results.md").read_text().startswith(f"<!-- settings {latest['settings_hash']}")
