"""Coached expert traces for agent SFT: the job's coach note precedes a turn and the lapsing expert follows it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mimesis_pl.csd.prompts import HINDSIGHT_HEADER
from mimesis_pl.data.expert_traces import is_coached, main, record_expert_traces
from mimesis_pl.envs import read_gym_tasks
from mimesis_pl.envs.expert import LapsingExpert, NoteFollowingExpert
from mimesis_pl.envs.gyms.persuade import PersuadeExpert

PERSUADE = Path(__file__).resolve().parents[2] / "assets" / "data" / "persuade" / "train" / "PersuadeGym.parquet"


def tasks(n=3):
    return read_gym_tasks(str(PERSUADE))[:n]


def test_a_noted_turn_never_lapses():
    lapsing = LapsingExpert(PersuadeExpert(), rate=0.9, key="k", seed=0)
    following = NoteFollowingExpert(lapsing, frozenset({2, 3}))
    assert lapsing.lapses(2) and lapsing.lapses(3)  # rate 0.9: these would lapse
    assert not following.lapses(2) and not following.lapses(3)
    assert [following.lapses(t) for t in (1, 4, 5)] == [lapsing.lapses(t) for t in (1, 4, 5)]


def test_coached_traces_carry_framed_notes_before_turns_and_do_not_lapse():
    plain, plain_counts = asyncio.run(record_expert_traces(tasks(), max_turns=12, lapse_rate=0.5, seed=0))
    coached, counts = asyncio.run(
        record_expert_traces(tasks(), max_turns=12, lapse_rate=0.5, seed=0, coached_share=1.0)
    )
    assert plain_counts["lapsed_turns/PersuadeGym"] > 0  # the same tasks lapse without notes
    assert counts["lapsed_turns/PersuadeGym"] == 0
    assert counts["coached_traces/PersuadeGym"] == 3 and counts["notes/PersuadeGym"] > 0
    for record in coached:
        messages = record["messages"]
        notes = [i for i, m in enumerate(messages) if m["role"] == "user" and HINDSIGHT_HEADER in m["content"]]
        assert len(notes) == len(record["coach_notes"]) > 0
        for i in notes:  # where the CSD teacher row puts it: after the observation, right before the turn
            assert messages[i - 1]["role"] == "tool" and messages[i + 1]["role"] == "assistant"
    assert all("coach_notes" not in r for r in plain)
    # the public conversation is unchanged apart from the notes, and shorter: no turn wasted restating
    assert sum(len(r["messages"]) - 2 * len(r["coach_notes"]) for r in coached) < sum(len(r["messages"]) for r in plain)


def test_coached_share_is_a_share_of_traces_and_checked():
    keys = [f"PersuadeGym/{k}" for k in range(400)]
    share = sum(is_coached(k, 0, 0.25) for k in keys) / len(keys)
    assert 0.18 < share < 0.32
    assert not any(is_coached(k, 0, 0.0) for k in keys)
    with pytest.raises(ValueError, match="coached_share"):
        asyncio.run(record_expert_traces(tasks(1), coached_share=1.5))


def test_record_experts_cli_writes_coached_traces(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    argv = ["--src", str(PERSUADE), "--out", str(out), "--max-turns", "12", "--lapse-rate", "0.3"]
    assert main([*argv, "--coached-share", "0.5", "--note-framing", "bare"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    summary = json.loads(capsys.readouterr().out)
    assert summary["coached_traces/PersuadeGym"] == sum("coach_notes" in r for r in rows) > 0
    assert not any(HINDSIGHT_HEADER in m["content"] for r in rows for m in r["messages"] if m["role"] == "user")


def test_notes_naming_the_open_point_are_task_specific():
    """Notes must carry what a placebo (another task's note) lacks: the point this user left open."""
    from mimesis_pl.csd.scripted_coach import ScriptedCoach

    def notes(coach):
        recs, _ = asyncio.run(
            record_expert_traces(tasks(), max_turns=12, lapse_rate=0.5, seed=0, coached_share=1.0, coach=coach)
        )
        return [set(r["coach_notes"].values()) for r in recs]

    generic = notes(ScriptedCoach())
    specific = notes(ScriptedCoach(name_open_point=True))
    assert len(set.union(*generic)) < len(set.union(*specific))
    assert all(a.isdisjoint(b) for i, a in enumerate(specific) for b in specific[i + 1 :])  # no two tasks share one
    assert any("point about" in n for s in specific for n in s)


def test_an_open_point_note_names_the_point_still_open_not_the_one_just_credited():
    """A reply credits the answered point ("a fair point about X") before naming the open one ("my point about
    Y"); the note must name Y, the point the expert's next turn takes up (it named X before this test)."""
    import re

    from mimesis_pl.csd.scripted_coach import ScriptedCoach

    recs, _ = asyncio.run(
        record_expert_traces(
            tasks(), max_turns=12, lapse_rate=0.0, seed=0, coached_share=1.0, coach=ScriptedCoach(name_open_point=True)
        )
    )
    checked = 0
    for record in recs:
        messages = record["messages"]
        for i, m in enumerate(messages):
            if m["role"] == "user" and "point about" in m["content"] and messages[i - 1]["role"] == "tool":
                reply = messages[i - 1]["content"]
                open_point = re.search(r"not answered my point about ([^.]+)", reply).group(1).strip()
                assert f"point about {open_point} directly" in m["content"]
                checked += "fair point about" in reply
    assert checked > 0  # the replies that credit one point and name another were among those checked
