"""MirrorBench as the spec lists it (docs/decisions.md S47): the judge compares the real turns followed with the
simulated conversation, both as ``ROLE: content`` lines, and a real chat that opens with the assistant opens the
replay with a mirror reply."""

from __future__ import annotations

import asyncio

from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.mirrorbench import render_turns


def _run(tokenizer, row, respond):
    ctx = make_context(tokenizer, respond, enable_think=False, max_new_tokens=64)
    result = asyncio.run(get_task("mirrorbench").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    return result, ctx


def test_turns_render_as_role_content_lines():
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]
    assert render_turns(turns) == "USER: hi\nASSISTANT: Hello!"
    assert render_turns([]) == ""


def test_the_judge_sees_the_followed_real_turns_and_the_simulated_conversation(tiny_tokenizer):
    replies = ["its really slow", "5 yrs i think"]
    _, ctx = _run(tiny_tokenizer, reference_row("mirrorbench"), lambda p, k: replies[k])
    judged = ctx.judge.requests[-1][-1]["content"]
    real = "USER: my laptop is super slow\nASSISTANT: How old is it?\nUSER: like 5 years"
    simulated = "USER: its really slow\nASSISTANT: I see. Tell me more.\nUSER: 5 yrs i think"
    assert real in judged and simulated in judged
    assert "Try checking startup programs." not in judged  # the dropped trailing assistant turn is not compared


def test_a_real_chat_that_opens_with_the_assistant_opens_with_a_mirror_reply(tiny_tokenizer):
    row = reference_row("mirrorbench")
    row["extra_info"]["turns"] = [
        {"role": "assistant", "content": "Hi! What can I do for you?"},
        {"role": "user", "content": "wifi keeps dropping"},
        {"role": "assistant", "content": "Which router do you have?"},
        {"role": "user", "content": "no idea"},
    ]
    result, ctx = _run(tiny_tokenizer, row, lambda p, k: "it drops every hour")
    assert len(ctx.partner.requests) == 2 and result.metrics["mirrorbench/turns"] == 2.0
    assert ctx.partner.requests[0] == [ctx.partner.requests[1][0]]  # the opening call holds only the system prompt
    assert "AI: I see. Tell me more.\n\nWrite the user's next message." in ctx.policy.engine.prompts[0]
    judged = ctx.judge.requests[-1][-1]["content"]
    assert "ASSISTANT: I see. Tell me more.\nUSER: it drops every hour" in judged
