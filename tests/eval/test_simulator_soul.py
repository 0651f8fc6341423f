"""SOUL suite: hand-worked scoring, the set/task checks, the tiny config through the CLI killed and resumed,
and unscored rows counted (never scored as 0)."""

from __future__ import annotations

import asyncio
import json

import pytest
from simulator_helpers import (
    Killed,
    assert_no_scored_item_redone,
    cache_lines,
    run_suite,
    scalars,
)

from mimesis_pl.eval.agent_backend import EngineAgentSettings
from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.simulator.base import SuiteContext
from mimesis_pl.eval.simulator.soul import suite as soul
from mimesis_pl.eval.simulator.soul.data import SoulDataModule
from mimesis_pl.eval.simulator.soul.scoring import (
    across_seeds,
    axis_scores,
    dataset_scores,
    degenerate_seeds,
    seed_summary,
    soul_index,
)
from mimesis_pl.eval.trials import TrialCache
from mimesis_pl.tasks.base import TaskResult

CONFIG = "configs/tiny/eval_soul.yaml"
SETS = ["--data.init_args.sets", "[fantom, hitom, mistakes]", "--model.init_args.suite.init_args.seeds", "[0, 1]"]
# fantom 2 + hitom 2 + mistakes 3 rows, x 2 seeds; the third mistakes row lacks its question: task_error.
ITEMS, BROKEN = 14, 2


def test_scores_axes_headline_and_row_weighted_overall_by_hand():
    scores = {"fantom": [1.0, 0.0, 1.0, 1.0], "hitom": [0.5], "lifechoices": [0.0, 1.0], "userllm": []}
    # fantom 3/4 = 75, hitom 50, lifechoices 50, userllm no scored row.
    assert dataset_scores(scores) == {"fantom": 75.0, "hitom": 50.0, "lifechoices": 50.0, "userllm": None}
    axes = axis_scores(dataset_scores(scores))
    # COG = (75 + 50) / 2; ROLE = 50; CONV has only userllm (None); SS and EVAL absent.
    assert axes == {"CONV": None, "SS": None, "COG": 62.5, "ROLE": 50.0, "EVAL": None}
    assert soul_index(axes) == pytest.approx(56.25)  # (62.5 + 50) / 2: the S23 headline
    summary = seed_summary(scores)
    # Row-weighted: (3 + 0.5 + 1) / 7 rows = 64.2857...; it differs from the headline. Without a Sotopia row the
    # paper's Overall (row-weighted all/score) is the same number.
    assert summary["overall_row_weighted"] == pytest.approx(450 / 7) == summary["overall"]
    assert summary["axes_covered"] == 2 and summary["alignx_combined"] is None


def _seed(zero_sets: int, overall: float) -> dict:
    return {
        "datasets": {f"s{i}": 0.0 for i in range(zero_sets)} | {"fantom": 80.0},
        "overall": overall,
        "overall_row_weighted": overall,
        "axes": {a: 10.0 for a in ("CONV", "SS", "COG", "ROLE", "EVAL")},
        "soul_index": overall,
        "alignx_combined": None,
    }


def test_degenerate_seed_rule_needs_eight_zero_sets_and_a_15_point_gap():
    per_seed = {0: _seed(0, 60.0), 1: _seed(8, 44.0), 2: _seed(9, 46.0)}
    # median of (60, 44, 46) = 46: seed 1 is 2 below (kept); only a seed > 15 below with >= 8 zeros goes.
    assert degenerate_seeds(per_seed) == {}
    per_seed[1] = _seed(8, 30.9)
    assert list(degenerate_seeds(per_seed)) == [1]
    per_seed[1] = _seed(7, 10.0)  # far below but only 7 zero sets: a bad model, not a broken run
    assert degenerate_seeds(per_seed) == {}
    assert degenerate_seeds({1: _seed(20, 0.0)}) == {}  # one seed is never dropped
    per_seed[1] = _seed(8, 30.9)
    summary = across_seeds(per_seed, degenerate_seeds(per_seed))
    assert summary["soul_index"]["n"] == 2 and summary["soul_index"]["mean"] == pytest.approx(53.0)
    assert summary["soul_index"]["std"] == pytest.approx(2**0.5 * 7)  # stdev(60, 46)


def _row(source: str, index: int) -> str:
    return (
        json.dumps(
            {"data_source": source, "prompt": [{"role": "user", "content": "q"}], "extra_info": {"index": index}}
        )
        + "\n"
    )


def test_every_soul_set_has_a_task_and_listed_sets_must_have_rows(tmp_path):
    from mimesis_pl.eval.simulator.soul.data import soul_sets
    from mimesis_pl.tasks.registry import BUILTIN_TASKS

    assert len(soul_sets()) == 27 and [s for s in soul_sets() if s not in BUILTIN_TASKS] == []
    (tmp_path / "userllm_val.jsonl").write_text(_row("userllm", 0))
    (tmp_path / "hitom_val.jsonl").write_text(_row("hitom", 1) + _row("hitom", 0))
    dm = SoulDataModule([str(tmp_path)], sets=["hitom"])
    dm.setup()
    assert [(r.data_source, r.index) for r in dm.items] == [("hitom", 0), ("hitom", 1)]
    with pytest.raises(ValueError, match=r"\['coser'\] have no rows"):
        SoulDataModule([str(tmp_path)], sets=["coser"]).setup()


def test_tiny_soul_runs_is_killed_and_resumes_without_redoing_items(tmp_path, monkeypatch):
    out, runs = tmp_path / "out", tmp_path / "runs"
    real, calls = soul.run_row, [0]

    async def dying(*args, **kwargs):
        if calls[0] >= 5:
            raise Killed("power cut")
        calls[0] += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(soul, "run_row", dying)
    with pytest.raises(Killed):
        run_suite(CONFIG, out, runs, *SETS)
    first = cache_lines(out / "soul_items.jsonl")
    assert not (out / "results.json").exists()
    assert 5 <= len(first) < ITEMS and {r["status"] for r in first} == {"scored"}

    monkeypatch.undo()
    run_suite(CONFIG, out, runs, *SETS)
    lines = cache_lines(out / "soul_items.jsonl")
    assert_no_scored_item_redone(first, lines[len(first) :])
    results = json.loads((out / "results.json").read_text())
    assert results["sets"] == ["fantom", "hitom", "mistakes"] and results["rows_per_set"]["mistakes"] == 3
    assert results["unscored"] == {"task_error": BROKEN}
    assert [results["per_seed"][s]["datasets"]["fantom"] is not None for s in ("0", "1")] == [True, True]
    assert results["headline"]["name"] == "SOUL-Index (axis mean)"
    resumed = scalars(runs / "tiny_eval_soul" / "version_1")
    assert resumed["items/reused"] == len(first) and resumed["items/run"] == ITEMS - len(first)
    assert resumed["soul/unscored/task_error"] == BROKEN
    md = (out / "results.md").read_text()
    assert "| Mistakes | ROLE | 3 |" in md and "| MIMESIS-9B | 75.1 |" in md and "Overall (the paper's" in md
    assert (out / "charts" / "soul.png").read_bytes().startswith(b"\x89PNG")
    dumped = json.loads((out / "conversations" / "seed1" / "hitom-0.json").read_text())  # one transcript per row
    assert (dumped["data_source"], dumped["index"]) == ("hitom", 0) and dumped["messages"]
    assert dumped["status"] in ("ok", "truncated")  # scored statuses (24 new tokens cut the tiny model short)

    run_suite(CONFIG, out, runs, *SETS)  # only the task errors are left, and they are retried
    again = scalars(runs / "tiny_eval_soul" / "version_2")
    assert again["items/run"] == BROKEN and again["items/reused"] == ITEMS - BROKEN


def test_judge_failures_are_retried_then_unscored_and_counted_never_zero(tmp_path, monkeypatch):
    async def verdicts(row, ctx, group_id, gen_uid, timeout_s):
        failed = row["data_source"] == "hitom"
        return TaskResult(
            row["data_source"], gen_uid, "judge_failed" if failed else "ok", 0.0, 0.0 if failed else 1.0, {}, None
        )

    monkeypatch.setattr(soul, "run_row", verdicts)
    dm = SoulDataModule(["assets/data/eval/soul"], sets=["fantom", "hitom"])
    dm.setup()
    suite = soul.SoulSuite(
        EngineAgentSettings(model_path="assets/tiny-qwen3", max_new_tokens=8), seeds=[0, 1], allow_unscored_sets=True
    )
    suite.start()
    ctx = SuiteContext(TrialCache(tmp_path / "items.jsonl"), RetryPolicy(max_attempts=2, backoff_s=0.0), 4, tmp_path)
    asyncio.run(suite.run_batch(dm.items, ctx))
    report = suite.report(ctx)
    assert report.results["unscored"] == {"judge_failed": 4}  # 2 hitom rows x 2 seeds
    assert report.results["summary"]["datasets"]["hitom"]["mean"] is None  # not 0
    assert report.results["summary"]["axes"]["COG"]["mean"] == 100.0  # fantom alone
    assert all(line["attempts"] == 2 for line in cache_lines(tmp_path / "items.jsonl") if line["status"] == "unscored")
    asyncio.run(suite.aclose())
