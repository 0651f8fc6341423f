"""Report writers: results JSON, Markdown table, TensorBoard scalars, one PNG per gym."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from replay_oracle_answers import decision_for

from mimesis_pl.eval.replay import ReplayExecutor, ReplayScorer, ScriptedAgent, load_cases, project
from mimesis_pl.eval.report import (
    episode_markdown,
    episode_scalars,
    replay_markdown,
    replay_scalars,
    write_episode_report,
    write_replay_report,
)
from mimesis_pl.eval.trials import RunIdentity, TrialRecord, aggregate_trials

IDENTITY = RunIdentity("agent", "rev1", "sim")


def _summaries():
    records = []
    for gym, rewards in {"function": [1.0, 0.0, 1.0, None], "turtle": [0.4, 1.0, None, None]}.items():
        for trial, reward in enumerate(rewards):
            key = IDENTITY.key(gym, "cfg", "t0", trial)
            records.append(
                TrialRecord(key=key, status="unscored", failure="simulator")
                if reward is None
                else TrialRecord(key=key, status="scored", reward=reward)
            )
    return aggregate_trials(records, n_trials=4, ks=(1, 2))


def test_episode_report_files(tmp_path) -> None:
    summaries = _summaries()
    files = write_episode_report(tmp_path, summaries, ks=(1, 2), identity=IDENTITY, config={"max_turns": 16})
    data = json.loads(files.json.read_text())
    assert data["mode"] == "episode" and data["identity"]["agent_revision"] == "rev1"
    assert data["gyms"]["function"]["pass_at_k"]["2"] == pytest.approx(1.0)  # n=3, c=2: 1 - C(1,2)/C(3,2)
    assert data["gyms"]["turtle"]["unscored_by_kind"] == {"simulator": 2}
    table = files.markdown.read_text()
    assert "| gym | tasks | n | avg@n | pass@1 | pass@2 | pass^1 | pass^2 |" in table
    assert "| function | 1 | 4 | 0.667 | 0.667 | 1.000 | 0.667 | 0.333 | 3 | 1 (simulator: 1) | 0 |" in table
    scalars = episode_scalars(summaries)
    assert scalars["eval/function/pass@2"] == pytest.approx(1.0) and scalars["eval/turtle/unscored_trials"] == 2.0
    assert episode_markdown(summaries, (1,)).count("\n|") >= 3


def test_replay_report_files(tmp_path) -> None:
    plans = [project(c) for c in load_cases("assets/replay")]
    agent = ScriptedAgent({rid: decision_for(os[0]) for p in plans for rid, os in p.expected.items()})
    summary = asyncio.run(ReplayExecutor(agent, scorer=ReplayScorer()).run(plans)).summary()
    files = write_replay_report(tmp_path, summary)
    data = json.loads(files.json.read_text())
    assert data["mode"] == "replay" and data["unscored_by_kind"] == {"unjudged": 1}
    assert "| flights-001 | 2 | 2 | 0 | 0 | 0 |" in files.markdown.read_text()
    assert replay_scalars(summary)["replay/pass_rate"] == 1.0
    assert "steps skipped" in replay_markdown(summary)


def test_one_png_per_gym_and_one_for_replay(tmp_path) -> None:
    pytest.importorskip("matplotlib")  # optional dependency: charts are skipped without it
    files = write_episode_report(tmp_path, _summaries(), ks=(1, 2))
    assert [p.name for p in files.charts] == ["function.png", "turtle.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in files.charts)
    plans = [project(c) for c in load_cases("assets/replay/flights.yaml")]
    agent = ScriptedAgent({rid: decision_for(os[0]) for p in plans for rid, os in p.expected.items()})
    replay = write_replay_report(tmp_path, asyncio.run(ReplayExecutor(agent).run(plans)).summary())
    assert [p.name for p in replay.charts] == ["replay.png"] and replay.charts[0].read_bytes().startswith(b"\x89PNG")


def test_charts_are_skipped_without_matplotlib(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    files = write_episode_report(tmp_path, _summaries(), ks=(1,))
    assert files.charts == () and files.json.exists() and files.markdown.exists()
