"""Sotopia's action reading as the reference does it (docs/decisions.md S45): newlines inside JSON strings escaped,
the longest JSON value in the text, ``none`` and unknown types read as speech with the whole text; the episode's
opening, stop rules and the judge's context."""

from __future__ import annotations

import asyncio

from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.clients import ScriptedPartner
from mimesis_pl.tasks.sotopia import escape_newlines_in_strings, lenient_json, parse_action, should_stop

NONE = '{"action_type": "none", "argument": ""}'


def test_newlines_are_escaped_inside_strings_only():
    assert escape_newlines_in_strings('{"a": "x\ny"}\n') == '{"a": "x\\ny"}\n'
    # an escaped quote does not end the string; the newline after it is still inside
    assert escape_newlines_in_strings('{"a": "say \\"hi\n\\""}') == '{"a": "say \\"hi\\n\\""}'
    assert escape_newlines_in_strings("[1,\n2]") == "[1,\n2]"


def test_lenient_json_takes_the_whole_text_else_the_longest_decodable_value():
    assert lenient_json('{"argument": "one\ntwo"}') == {"argument": "one\ntwo"}
    # prose around two values: the longer by its serialisation wins ('{"b": [1, 2]}' beats '{"a": 1}')
    assert lenient_json('ok {"a": 1} and then {"b": [1, 2]} 7') == {"b": [1, 2]}
    # a list holding a dict is longer than the dict alone; it is returned as is
    assert lenient_json('x [1, {"a": 2}] {"b": 1}') == [1, {"a": 2}]
    assert lenient_json("no json here at all") is None
    assert lenient_json("") is None


def test_parse_action_reads_lenient_json_and_turns_everything_else_into_speech():
    # a raw newline inside the argument: strict JSON fails, the lenient reading keeps the action
    assert parse_action('{"action_type": "speak", "argument": "Hi.\nHow are you?"}') == ("speak", "Hi.\nHow are you?")
    # JSON wrapped in prose or a code fence
    assert parse_action('Sure: {"action_type": "action", "argument": "hands over the keys"}') == (
        "action",
        "hands over the keys",
    )
    assert parse_action('```json\n{"action_type": "leave", "argument": ""}\n```') == ("leave", "")
    # none, an unknown type and a non-mapping are speech with the whole text
    assert parse_action(NONE) == ("speak", NONE)
    dance = '{"action_type": "dance", "argument": "hi"}'
    assert parse_action(dance) == ("speak", dance)
    assert parse_action("  [1, 2]  ") == ("speak", "[1, 2]")
    assert parse_action("just words") == ("speak", "just words")
    # the type is matched ignoring case and surrounding space (S45)
    assert parse_action('{"action_type": " Non-Verbal Communication", "argument": "nods"}') == (
        "non-verbal communication",
        "nods",
    )


def test_only_a_late_leave_stops():
    assert not should_stop("leave", 4) and should_stop("leave", 5)
    assert not should_stop("speak", 14)


def test_none_actions_are_speech_and_never_end_the_episode(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: NONE, enable_think=False, max_new_tokens=64)
    ctx.partner = ScriptedPartner(NONE)
    ctx.options = {"sotopia": {"max_turns": 8}}
    result = asyncio.run(get_task("sotopia").run(reference_row("sotopia"), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    assert result.metrics["sotopia/turns"] == 4.0  # actions 0, 2, 4, 6 of 8: no stop after three "none" in a row
    transcript = result.transcript[-1]["content"]
    assert "did nothing" not in transcript and f'Maya Chen said: "{NONE}"' in transcript


def test_agent2_sees_the_start_marker_then_the_partners_first_action(tiny_tokenizer):
    row = reference_row("sotopia")
    row["extra_info"]["eval_position"] = "agent2"
    reply = '{"action_type": "speak", "argument": "Not this week."}'
    ctx = make_context(tiny_tokenizer, lambda p, k: reply, enable_think=False, max_new_tokens=64)
    ctx.options = {"sotopia": {"max_turns": 2}}
    result = asyncio.run(get_task("sotopia").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    first = ctx.policy.engine.prompts[0]
    assert first.index("The conversation begins.") < first.index('Maya Chen said: "I see. Tell me more."')
    assert ctx.partner.requests[0][-1]["content"] == "The conversation begins."


def test_the_judge_sees_both_backgrounds_goals_and_the_relationship(tiny_tokenizer):
    reply = '{"action_type": "speak", "argument": "Can we talk about the rent?"}'
    ctx = make_context(tiny_tokenizer, lambda p, k: reply, enable_think=False, max_new_tokens=64)
    ctx.options = {"sotopia": {"max_turns": 2}}
    result = asyncio.run(get_task("sotopia").run(reference_row("sotopia"), ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    judged = ctx.judge.requests[-1][-1]["content"]
    for part in (
        "Relationship: flatmates",
        "Maya Chen's background: A nurse who values fairness.",
        "Maya Chen's private goal: Get Leo to pay his half this week.",
        "Leo Park's background: A musician, often broke.",
        "Leo Park's private goal: Ask for a one-month extension.",
    ):
        assert part in judged, part
