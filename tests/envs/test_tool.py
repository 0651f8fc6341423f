"""The interact_with_env tool: schema, parsing of tool-call text, observation text."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.chat.tool_calls import format_tool_call
from mimesis_pl.envs import (
    INTERACT_TOOL_SCHEMA,
    Action,
    ToolError,
    format_observation,
    interact_tool_schema,
    parse_action,
)
from mimesis_pl.envs.tool import action_to_tool_call, parse_turn


def call(choice, content, name="interact_with_env", **extra):
    return format_tool_call(name, {"choice": choice, "content": content, **extra})


def test_schema_is_openai_tools_format():
    fn = INTERACT_TOOL_SCHEMA["function"]
    assert INTERACT_TOOL_SCHEMA["type"] == "function" and fn["name"] == "interact_with_env"
    params = fn["parameters"]
    assert params["required"] == ["choice", "content"]
    assert params["properties"]["choice"]["enum"] == ["action", "answer", "search"]
    assert params["properties"]["content"]["type"] == "string"
    json.dumps(INTERACT_TOOL_SCHEMA)  # serialisable as sent to an OpenAI-compatible server
    assert interact_tool_schema(("action",))["function"]["parameters"]["properties"]["choice"]["enum"] == ["action"]
    with pytest.raises(ValueError):
        interact_tool_schema(("finish",))


def test_round_trip_with_reasoning_and_prose():
    action = Action("answer", "Kiwi")
    text = "<think>It must be green inside.</think>\nMy guess:\n" + action_to_tool_call(action)
    assert parse_action(text) == action


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I think it is a kiwi.", "missing"),
        ("<tool_call>\n{not json}\n</tool_call>", "malformed"),
        ('<tool_call>\n{"name": "interact_with_env", "arguments": {"choice": "action"', "malformed"),
        (call("action", "hi", name="web_search"), "unknown_tool"),
        (call("finish", "done"), "bad_arguments"),
        (call("action", "   "), "bad_arguments"),
        (format_tool_call("interact_with_env", {"choice": "action"}), "bad_arguments"),
        (call("action", "[answer] Kiwi"), "bad_arguments"),
        (call("search", "test"), "choice_not_allowed"),
    ],
)
def test_errors_are_classified(text, kind):
    result = parse_action(text, allowed_choices=("action", "answer"))
    assert isinstance(result, ToolError) and result.kind == kind and result.message


def test_lenient_forms():
    assert parse_action(call("action", "[action] Is it red?")) == Action("action", "Is it red?")
    assert parse_action(call("answer", 225)) == Action("answer", "225")
    assert parse_action(call("action", "  spaced  ", thought="ignored")) == Action("action", "spaced")
    assert parse_action(
        '<tool_call>{"name": "interact_with_env", '
        '"arguments": "{\\"choice\\": \\"answer\\", \\"content\\": \\"x\\"}"}</tool_call>'
    ) == Action("answer", "x")


def test_only_the_first_call_of_a_turn_runs():
    parsed = parse_turn(call("action", "one") + "\n" + call("answer", "two"))
    assert parsed.action == Action("action", "one") and parsed.ignored_calls == 1


def test_observation_has_no_reward_line_unless_asked():
    assert format_observation("Yes.", reward=0.5) == "Yes."
    assert format_observation("Yes.", reward=0.5, show_reward=True) == "Yes.\nReward: 0.5"
