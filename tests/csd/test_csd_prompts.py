"""Coach prompts: both styles carry the privileged pair, respect the length limits, add no hidden fields."""

from __future__ import annotations

import pytest
from csd_fixtures import expert_episodes, make_trajectory, secret_fields, turn

from mimesis_pl.csd.evidence import TurnEvidence, assistant_turns, turn_evidence
from mimesis_pl.csd.leaks import find_leaks, hidden_values
from mimesis_pl.csd.prompts import (
    NO_REASONING,
    NO_REPLY,
    OMITTED,
    CoachRequest,
    HistoryLimits,
    build_request,
    coach_messages,
    render_history,
)
from mimesis_pl.envs import PrivilegedTurn

REASONING = "PRIVATE-THOUGHT the entity is a violin; the question about bows is true."
NEXT = "NEXT-REPLY Yes, it is."
MOVE = "Is it played with a bow?"


def conversation():
    steps = [
        (turn("action", "Is it an instrument?", thought="AGENT-SCRATCHPAD-0"), "Yes."),
        (turn("action", MOVE, thought="AGENT-SCRATCHPAD-1"), "Yes, it is."),
    ]
    record = [PrivilegedTurn("Yes.", REASONING), PrivilegedTurn("Yes, it is.", None)]
    return make_trajectory(steps, record)


@pytest.mark.parametrize("style", ["prospective", "corrective"])
def test_both_styles_carry_the_reasoning_and_the_next_reply(style):
    traj = conversation()
    evidence = TurnEvidence(1, REASONING, NEXT)
    request = build_request(traj.messages, evidence, style)
    system, user = request.messages()
    assert system["role"] == "system" and user["role"] == "user"
    assert REASONING in user["content"] and NEXT in user["content"]
    assert "Is it an instrument?" in user["content"]  # the history shows what the agent did (decisions A4)
    assert "AGENT-SCRATCHPAD-0" not in user["content"]  # but not its scratchpad
    assert "NONE" in system["content"]
    if style == "prospective":
        assert MOVE not in user["content"] and request.turn_message is None and request.agent_turn == ""
    else:
        assert MOVE in user["content"] and "AGENT-SCRATCHPAD-1" in user["content"]
    assert coach_messages(request) == request.messages()


def test_absent_channels_are_named_not_left_blank():
    traj = conversation()
    request = build_request(traj.messages, TurnEvidence(0, "", ""), "prospective")
    content = request.messages()[1]["content"]
    assert NO_REASONING in content and NO_REPLY in content


def test_bad_style_and_turn_are_refused():
    traj = conversation()
    with pytest.raises(ValueError, match="style"):
        build_request(traj.messages, TurnEvidence(1, REASONING, NEXT), "retrospective")
    with pytest.raises(ValueError, match="out of range"):
        build_request(traj.messages, TurnEvidence(5, REASONING, NEXT), "prospective")


def test_each_message_and_the_whole_history_are_cut_to_their_limits():
    long_obs = "word " * 1000  # 5000 characters
    steps = [(turn("action", f"Question number {k}?"), f"Answer {k}. " + long_obs) for k in range(8)]
    traj = make_trajectory(steps, [PrivilegedTurn("x", "y")] * 8)
    limits = HistoryLimits()
    history = render_history(traj.messages, limits)
    assert len(history) <= 8000
    assert history.startswith(OMITTED + "\n")
    lines = history.split("\n")[1:]
    assert all(len(line) <= 1500 + len("[environment] ") for line in lines)
    assert lines[-1].startswith("[environment] Answer 7.")  # the most recent messages are kept
    short = render_history(traj.messages[:4], limits)
    assert not short.startswith(OMITTED) and short.split("\n")[0].startswith("[setting]")
    tiny = HistoryLimits(message_chars=50, history_chars=300)
    assert len(render_history(traj.messages, tiny)) <= 300
    assert all(len(line) <= 50 + len("[environment] ") for line in render_history(traj.messages, tiny).split("\n"))


def test_the_request_history_applies_the_limits():
    steps = [(turn("action", "Q?"), "A " * 3000)] * 6
    traj = make_trajectory(steps, [PrivilegedTurn("A", "why")] * 6)
    request = build_request(traj.messages, TurnEvidence(5, "why", "A"), "corrective", limits=HistoryLimits())
    assert len(request.history) <= 8000
    assert len(request.agent_turn) <= 4000 + 1500 + 100


def _template(style):
    """The fixed prose of a style's prompt, with every slot empty."""
    return "\n".join(m["content"] for m in coach_messages(CoachRequest(style=style, turn=0, history="")))


@pytest.mark.parametrize("style", ["prospective", "corrective"])
def test_prompts_add_no_hidden_field_beyond_the_privileged_channel(style):
    """On real expert episodes: any hidden value in a prompt is public already or came with the
    reasoning / next reply — the prompt builder itself never adds task data."""
    checked = 0
    for played in expert_episodes():
        traj, hidden = played.trajectory, secret_fields(played.task)
        values = hidden_values(hidden)
        assert values, played.task
        positions = assistant_turns(traj.messages)
        template = _template(style)
        for evidence in turn_evidence(traj):
            request = build_request(traj.messages, evidence, style)
            prompt = "\n".join(m["content"] for m in request.messages())
            before = traj.messages[: positions[evidence.turn]]
            allowed = "\n".join(
                [
                    *(str(m["content"]) for m in before),
                    evidence.reasoning_before,
                    evidence.reply_after,
                    str(request.turn_message["content"]) if request.turn_message else "",
                ]
            )
            for value in find_leaks(prompt, values):
                if find_leaks(template, [value]):
                    continue  # a word of our own instructions (e.g. "output"), not task data
                assert find_leaks(allowed, [value]), (played.task, evidence.turn, value)
            checked += 1
    assert checked >= 16
