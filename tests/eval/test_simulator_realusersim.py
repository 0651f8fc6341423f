"""RealUserSim suite: the tiny config through the CLI, kill and resume, errors as misses (decisions S24), protocol."""

from __future__ import annotations

import asyncio
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

from mimesis_pl.eval.simulator.models import ScriptedChatModel
from mimesis_pl.eval.simulator.realusersim import suite as realusersim
from mimesis_pl.eval.simulator.realusersim.data import load_realusersim_cases, sattolo_derangement
from mimesis_pl.eval.simulator.realusersim.protocol import converse, judged_turns
from mimesis_pl.eval.simulator.text import parse_fidelity_verdict, strip_reasoning
from mimesis_pl.failures import JudgeFailure, SimulatorFailure
from mimesis_pl.llm import ScriptedChatSettings

CONFIG = "configs/tiny/eval_realusersim.yaml"
CASES, CONDITIONS = 6, 3
ITEMS = 2 * CASES * CONDITIONS  # one conversation and one judgment per case and condition (one seed)


def test_tiny_realusersim_runs_is_killed_and_resumes_without_redoing_items(tmp_path, monkeypatch):
    out, runs = tmp_path / "out", tmp_path / "runs"
    monkeypatch.setattr(realusersim, "scripted_fidelity_judge", kill_after(9, realusersim.scripted_fidelity_judge))
    with pytest.raises(Killed):
        run_suite(CONFIG, out, runs)
    first = cache_lines(out / "realusersim_items.jsonl")
    assert 0 < sum(r["key"]["gym"] == "realusersim/judge" for r in first) < CASES * CONDITIONS

    monkeypatch.undo()
    run_suite(CONFIG, out, runs)
    lines = cache_lines(out / "realusersim_items.jsonl")
    assert_no_scored_item_redone(first, lines[len(first) :])
    done = sum(r["status"] == "scored" for r in first)
    resumed = scalars(runs / "tiny_eval_realusersim" / "version_1")
    assert resumed["items/reused"] == done and resumed["items/run"] == ITEMS - done

    results = json.loads((out / "results.json").read_text())
    mapping = json.loads((out / "shuffled_profile_mapping.json").read_text())
    assert len(mapping) == CASES and all(case != donor for case, donor in mapping.items())
    for condition in ("task_only", "correct_profile", "shuffled_profile"):
        summary = results["conditions"][condition]
        # technology_it-3 makes the judge answer without JSON: 1 error in 6 cases, counted as 0 hits (S24).
        assert summary["n_cases"] == CASES and summary["error_rate"] == pytest.approx(100 / 6)
        assert summary["errors_by_kind"] == {"judge": 1}
        fi, judged = summary["fi"]["mean"], summary["fi_judged_only"]["mean"]
        assert fi == pytest.approx(judged * 5 / 6)  # same hits, one more (zero) case in the denominator
        assert summary["ci95"][0] <= fi <= summary["ci95"][1]
        assert resumed[f"realusersim/{condition}/fi"] == pytest.approx(fi)
    profile = results["conditions"]["correct_profile"]["fi"]["mean"]
    assert profile > results["conditions"]["task_only"]["fi"]["mean"]
    text = (out / "results.md").read_text()
    assert "| correct_profile | 6 |" in text and "| MIMESIS-9B | 94.0 |" in text
    assert (out / "charts" / "realusersim.png").read_bytes().startswith(b"\x89PNG")


def test_sattolo_derangement_has_no_fixed_point_and_is_seeded():
    for n in (2, 3, 7, 50):
        donors = sattolo_derangement(n, seed=3)
        assert sorted(donors) == list(range(n)) and all(d != i for i, d in enumerate(donors))
    assert sattolo_derangement(10, 1) == sattolo_derangement(10, 1) != sattolo_derangement(10, 2)


def test_conversation_stops_at_close_and_at_four_assistant_turns():
    def user(script):
        return ScriptedChatModel("u", lambda m, seed, t: script[sum(x["role"] == "assistant" for x in m)])

    assistant = ScriptedChatModel("a", lambda m, seed, t: "<think>plan</think>try this")
    settings = ScriptedChatSettings()
    chat = asyncio.run(converse("sys", user(["hi", "more", "thanks /close"]), assistant, settings, settings, 0))
    assert chat.termination_reason == "close_token" and len(chat.user_turns) == 3
    assert chat.messages[1] == {"role": "assistant", "content": "try this"}  # reasoning never shown
    chat = asyncio.run(converse("sys", user(["x"] * 10), assistant, settings, settings, 0))
    assert chat.termination_reason == "max_turns" and len(chat.user_turns) == 5
    assert judged_turns(chat.messages, 9, synthetic=True) == ["x"] * 5
    assert judged_turns([{"role": "user", "content": " /close"}], 9, synthetic=True) == []
    with pytest.raises(SimulatorFailure, match="reasoning-only"):
        asyncio.run(converse("sys", user(["<think>only thoughts</think>"]), assistant, settings, settings, 0))


def test_strip_reasoning_and_strict_verdict_parsing():
    assert strip_reasoning("<think>x</think> hello") == "hello"
    assert strip_reasoning("**Thinking Process:** be casual.\nMessage: hey there") == "hey there"
    assert strip_reasoning("Reasoning:\nno hand-off label") == ""
    keys = [
        "Persona_Affective_Traits_Match",
        "Linguistic_Style_Mechanics_Match",
        "Technical_Competency_Knowledge_Match",
        "Interaction_Data_Flow_Match",
        "Pacing_Action_Sequencing_Match",
    ]
    verdict = {keys[0]: True, keys[1]: {"is_matched": False}, keys[2]: "yes", keys[3]: "No", keys[4]: False}
    assert parse_fidelity_verdict("Here: " + json.dumps(verdict)) == (1, 0, 1, 0, 0)
    with pytest.raises(JudgeFailure, match="Pacing_Action_Sequencing_Match"):
        parse_fidelity_verdict(json.dumps({k: True for k in keys[:4]}))
    with pytest.raises(JudgeFailure, match="must be a boolean"):
        parse_fidelity_verdict(json.dumps({**verdict, keys[2]: "maybe"}))
    with pytest.raises(JudgeFailure, match="no JSON object"):
        parse_fidelity_verdict("all five match")


def test_case_loader_names_file_line_and_field(tmp_path):
    with open("assets/data/eval/realusersim/test_sets/ecommerce.jsonl") as fh:
        good = json.loads(fh.readline())
    path = tmp_path / "medical_health.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "test_id": 9, "problem_desc": " "}) + "\n")
    with pytest.raises(ValueError, match=r"medical_health.jsonl:line 2: field 'problem_desc' is empty"):
        load_realusersim_cases([str(path)])
    profile = {**good["user_profile"], "linguistic_profile": None}
    path.write_text(json.dumps({**good, "user_profile": profile}) + "\n")
    with pytest.raises(ValueError, match=r"line 1: user_profile: missing field 'linguistic_profile'"):
        load_realusersim_cases([str(path)])
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(ValueError, match="already defined"):
        load_realusersim_cases([str(path)])
    path.write_text(json.dumps(good) + "\n")
    (case,) = load_realusersim_cases([str(path)])
    assert case.case_id == "medical_health-1" and case.demographics == {"age": "25-34", "occupation": "student"}
