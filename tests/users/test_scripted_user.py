"""ScriptedUser: persona parsing, determinism, private reasoning, statelessness."""

from __future__ import annotations

import asyncio
import json

import pytest

from mimesis_pl.chat.think import split_think
from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.users.scripted import ScriptedUser, parse_persona


def persona_messages(persona, *utterances, replies=()):
    messages = [{"role": "system", "content": f"Play along.\n<persona>\n{json.dumps(persona)}\n</persona>"}]
    for i, said in enumerate(utterances):
        messages.append({"role": "user", "content": said})
        if i < len(utterances) - 1:
            messages.append({"role": "assistant", "content": replies[i] if i < len(replies) else "ok"})
    return messages


ENTITY = {
    "gym": "TelepathyGym",
    "entity": "Violin",
    "description": "Violin - a wooden string instrument played with a bow.",
}
TRIP = {
    "gym": "IntentionGym",
    "task": "Plan a weekend trip.",
    "details": [
        {"aspect": "Budget for the trip", "options": ["Low", "High"], "preference": "Low"},
        {"aspect": "Type of lodging", "options": ["Hotel", "Camping"], "preference": "Camping"},
    ],
}
CLAIM = {
    "gym": "PersuadeGym",
    "claim": "Homework should be banned",
    "argument": "Homework steals family time from children. It widens gaps between rich and poor pupils. "
    "Research shows little benefit for young learners. Teachers spend evenings grading instead of planning.",
}


def test_telepathy_replies_with_private_reasoning():
    user = ScriptedUser()
    reply = asyncio.run(user.reply(persona_messages(ENTITY, "Is it played with a bow?"), episode_id="e"))
    assert reply.public == "Yes."
    assert "Violin - a wooden string instrument" in reply.reasoning and "bow" in reply.reasoning
    assert asyncio.run(user.reply(persona_messages(ENTITY, "Is it made of metal?"), episode_id="e")).public == "No."
    text = user.respond_text(persona_messages(ENTITY, "Is it played with a bow?"))
    assert split_think(text) == (reply.reasoning, "Yes.")


def test_replies_are_deterministic_and_stateless():
    messages = persona_messages(TRIP, "What budget do you have?")
    first = ScriptedUser().respond(messages)
    assert ScriptedUser().respond(messages) == first
    assert first.public == "About the budget for the trip: Low."
    # The same question later in a conversation: already answered, so nothing new.
    later = ScriptedUser().respond(persona_messages(TRIP, "What budget do you have?", "And your budget?"))
    assert later.public == "I don't have a particular preference about that."
    assert "Camping" in later.reasoning and "Camping" not in later.public


def test_think_false_drops_reasoning():
    assert ScriptedUser(think=False).respond(persona_messages(ENTITY, "Is it wooden?")).reasoning is None


def test_persuasion_stance_moves_with_answered_points_only():
    user = ScriptedUser()
    generic = user.respond(persona_messages(CLAIM, "You are wrong."))
    assert generic.public.endswith("Stance: Strongly Agree")
    point = generic.public.split("my point about ")[1].split(".")[0].replace(" and ", ", ").split(", ")
    answered = user.respond(persona_messages(CLAIM, "You are wrong.", f"About {', '.join(point)}: that is overstated."))
    assert not answered.public.endswith("Stance: Strongly Agree")
    assert CLAIM["argument"] in answered.reasoning and "family time from children" not in answered.public


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([{"role": "user", "content": "hi"}], "no <persona>"),
        (
            [{"role": "system", "content": "<persona>{not json}</persona>"}, {"role": "user", "content": "hi"}],
            "not JSON",
        ),
        (
            [{"role": "system", "content": '<persona>{"x": 1}</persona>'}, {"role": "user", "content": "hi"}],
            "'gym' field",
        ),
        (
            [
                {"role": "system", "content": '<persona>{"gym": "ChessGym"}</persona>'},
                {"role": "user", "content": "hi"},
            ],
            "no rules for gym",
        ),
        (
            [
                {"role": "system", "content": '<persona>{"gym": "TelepathyGym"}</persona>'},
                {"role": "user", "content": "Is it red?"},
            ],
            "lacks field",
        ),
        ([{"role": "system", "content": "x"}, {"role": "assistant", "content": "hi"}], "last message"),
    ],
)
def test_bad_conversations_raise_user_errors(messages, match):
    with pytest.raises(UserSimulatorError, match=match):
        ScriptedUser().respond(messages)


def test_parse_persona_reads_the_system_message():
    assert parse_persona(persona_messages(ENTITY, "q"))["entity"] == "Violin"
