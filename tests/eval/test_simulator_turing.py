"""Turing suite: the tiny config through the CLI, kill and resume (decisions S25), loud failure, the pure pieces."""

from __future__ import annotations

import json

import pytest
from simulator_helpers import (
    Killed,
    assert_no_scored_item_redone,
    cache_lines,
    kill_after,
    run_suite,
    scalars,
)

from mimesis_pl.eval.simulator.text import parse_turing_rating
from mimesis_pl.eval.simulator.turing import suite as turing
from mimesis_pl.eval.simulator.turing.data import TuringRow
from mimesis_pl.failures import JudgeFailure

CONFIG = "configs/tiny/eval_turing.yaml"
# 8 rows x 2 seeds generated; 7 rows have a history x 2 seeds scored; 2 rows x 2 seeds fail at the judge.
GENERATIONS, SCORES, JUDGE_FAILS = 16, 14, 4


def test_tiny_turing_runs_is_killed_and_resumes_without_redoing_items(tmp_path, monkeypatch):
    out, runs = tmp_path / "out", tmp_path / "runs"
    monkeypatch.setattr(turing, "scripted_turing_judge", kill_after(5, turing.scripted_turing_judge))
    with pytest.raises(Killed):
        run_suite(CONFIG, out, runs)
    first = cache_lines(out / "turing_items.jsonl")
    assert not (out / "results.json").exists()
    # Killed in the first batch (4 rows): its 8 generations and the 5 ratings made before the kill are kept.
    assert sum(r["key"]["gym"] == "turing/generate" for r in first) == 8
    assert [r["status"] for r in first if r["key"]["gym"] == "turing/score"] == ["scored"] * 5

    monkeypatch.undo()
    run_suite(CONFIG, out, runs)
    lines = cache_lines(out / "turing_items.jsonl")
    assert_no_scored_item_redone(first, lines[len(first) :])
    results = json.loads((out / "results.json").read_text())
    # S25: the summary counts the items scored before the kill and after it.
    assert sum(s["n_scored"] for s in results["per_seed"]) == SCORES - JUDGE_FAILS
    assert sum(s["judge_failures"] for s in results["per_seed"]) == JUDGE_FAILS
    assert all(s["comparable"] for s in results["per_seed"])
    resumed = scalars(runs / "tiny_eval_turing" / "version_1")
    first_done = sum(r["status"] == "scored" for r in first)
    assert resumed["items/reused"] == first_done
    assert resumed["items/run"] == GENERATIONS + SCORES - first_done
    assert resumed["turing/turing_reward_mean"] == pytest.approx(results["summary"]["turing_reward_mean"]["mean"])
    assert "| mean ± SEM |" in (out / "results.md").read_text()
    assert (out / "charts" / "turing.png").read_bytes().startswith(b"\x89PNG")

    run_suite(CONFIG, out, runs)  # nothing left but the judge failures, which are retried
    again = scalars(runs / "tiny_eval_turing" / "version_2")
    assert again["items/run"] == JUDGE_FAILS and again["items/reused"] == GENERATIONS + SCORES - JUDGE_FAILS
    assert json.loads((out / "results.json").read_text())["summary"] == results["summary"]


def test_every_judge_call_failing_is_an_error_not_a_nan_summary(tmp_path, monkeypatch):
    def down(messages, seed, temperature):
        raise JudgeFailure("judge endpoint down")

    monkeypatch.setattr(turing, "scripted_turing_judge", down)
    with pytest.raises(RuntimeError, match="every judge call failed"):
        run_suite(CONFIG, tmp_path / "out", tmp_path / "runs")
    assert not (tmp_path / "out" / "results.json").exists()


ROW = TuringRow(
    user_id="u1",
    post_id="p1",
    target_idx=2,
    prompt=({"role": "user", "content": "x"},),
    ground_truth="ok thanks",
    user_history="i like hiking in the alps every summer",
    context="Assistant: The Alps have many trails for every level.",
)


def test_cleaning_and_penalties():
    assert turing.clean_generation("<think>plan</think><reasoning>why</reasoning>[HUMAN]: lol ok") == "lol ok"
    assert turing.clean_generation("  sure thing ") == "sure thing"
    assert turing.penalties("Certainly! I'd be happy to help.", ROW)["assistant_like"]
    assert turing.penalties("the alps have many trails for every level", ROW)["source_copy"]
    assert not turing.penalties("nice, any easy ones near zurich?", ROW)["source_copy"]
    assert turing.penalties("Assistant: here you go", ROW)["wrong_role"]


def test_rating_parse_is_strict():
    assert parse_turing_rating('Sure. {"rating": 6}') == 6
    assert parse_turing_rating('{"rating": "3"}') == 3
    for bad in ("B is human", '{"score": 5}', '{"rating": 9}', '{"rating": 4.5}', '{"rating": true}'):
        with pytest.raises(JudgeFailure):
            parse_turing_rating(bad)


def test_a_seed_is_comparable_within_the_tolerance_of_the_modal_count():
    seeds = [{"n_scored": 100}, {"n_scored": 100}, {"n_scored": 95}, {"n_scored": 94}]
    turing.mark_comparable(seeds, 0.05)
    # modal count 100, tolerance 0.05 · 100 = 5 items: 95 is within it, 94 is not.
    assert [s["comparable"] for s in seeds] == [True, True, True, False]
    nothing = [{"n_scored": 0}, {"n_scored": 1}]
    turing.mark_comparable(nothing, 0.5)
    # modal 0 (first of the tie), the tolerance is taken of max(modal, 1) = 1: 0.5 item, so 1 is out.
    assert [s["comparable"] for s in nothing] == [True, False]
