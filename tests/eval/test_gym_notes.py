"""Every gym's report line says whether its numbers compare with UserRL's evaluation, and why not (issue 34
item 11): grader, corpus, task source, options changed from UserRL's evaluation behaviour."""

from __future__ import annotations

from mimesis_pl.eval.gym_notes import gym_notes

JUDGE = {"class_path": "ServedChatSettings", "init_args": {"url": "http://127.0.0.1:9/v1", "model": "gpt-4o"}}
GYMS = ["function", "telepathy", "turtle", "intention", "persuade", "search", "tau", "travel22"]


def test_offline_defaults_name_the_reason_for_every_gym():
    notes = gym_notes({}, GYMS)
    assert list(notes) == GYMS
    assert notes["function"].endswith(": comparable with UserRL's evaluation.")
    for gym in ("telepathy", "turtle", "intention", "persuade"):
        assert "not comparable" in notes[gym] and "rule grader" in notes[gym]
    assert "local BM25 index" in notes["search"] and "not comparable" in notes["search"]
    assert "our own tasks" in notes["tau"] and "not comparable" in notes["tau"]
    assert "generated scenarios" in notes["travel22"]


def test_judges_and_userrl_options_make_the_judged_gyms_comparable():
    options = {name: {"judge": JUDGE} for name in ("TelepathyGym", "TurtleGym", "IntentionGym", "PersuadeGym")}
    options["SearchGym"] = {"judge": JUDGE}
    http = {
        "class_path": "mimesis_pl.envs.gyms.tau.TauHttpRuntimeSettings",
        "init_args": {"url": "http://127.0.0.1:8300"},
    }
    options["TauGym"] = {"runtime": http}
    notes = gym_notes(options, GYMS)
    assert notes["telepathy"] == "TelepathyGym graded by the LLM judge gpt-4o: comparable with UserRL's evaluation."
    assert "within 1 (A51)" in notes["intention"] and "comparable with" in notes["intention"]
    assert "0.9999" in notes["turtle"]
    # Search is UserRL's judging but over another corpus: still not comparable, and the note says why
    assert "LLM judge gpt-4o" in notes["search"] and "not Serper" in notes["search"]
    assert "comparable with UserRL's evaluation when that runtime is the tau-bench proxy" in notes["tau"]


def test_options_changed_from_userrls_evaluation_are_named():
    options = {
        "FunctionGym": {"parsing": "package"},
        "PersuadeGym": {"judge": JUDGE, "reward_rule": "progress"},
        "IntentionGym": {"judge": JUDGE, "verdicts": "lenient"},
    }
    notes = gym_notes(options, ["function", "persuade", "intention"])
    assert "parsing='package' (UserRL's evaluation: 'userrl')" in notes["function"]
    assert "reward_rule='progress'" in notes["persuade"] and "not comparable" in notes["persuade"]
    assert "verdicts='lenient'" in notes["intention"]


def test_adapter_gyms_are_userrls_own_code():
    notes = gym_notes({"TauGym": {"userrl": {}}, "TurtleGym": {"userrl": {}, "userrl_defaults": "package"}}, GYMS[1:7])
    assert "adapter with eval.py's settings (A81): comparable" in notes["tau"]
    assert "package defaults, not eval.py's" in notes["turtle"]
