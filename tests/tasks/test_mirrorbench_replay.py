"""MirrorBench as the spec lists it (docs/decisions.md S47, S49): the judge compares the real turns followed with
the simulated conversation, both as ``ROLE: content`` lines; a real chat that opens with the assistant opens the
replay with a mirror reply; the lexical-diversity gaps are logged."""

from __future__ import annotations

import asyncio

import pytest
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.mirrorbench import hdd, lexical_gaps, mattr, render_turns, yules_k


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


def test_lexical_diversity_measures_on_hand_worked_token_lists():
    assert mattr([1, 1, 2], window=5) == pytest.approx(2 / 3)  # no longer than the window: plain type-token ratio
    assert mattr([1, 1, 2, 2], window=2) == pytest.approx((1 / 2 + 2 / 2 + 1 / 2) / 3)  # spans 11, 12, 22
    assert mattr([1, 2, 3, 1, 2], window=3) == 1.0  # every span of 3 has 3 types
    # HD-D, n = 3, draw 2: type 1 (f = 2) is always drawn; type 2 (f = 1) with 1 - C(2,2)/C(3,2) = 2/3
    assert hdd([1, 1, 2], sample=2) == pytest.approx((1 + 2 / 3) / 2)
    assert hdd([5, 6, 7], sample=42) == pytest.approx(1.0)  # draw = all 3 tokens: every type appears
    assert yules_k([1, 1, 2]) == pytest.approx(10_000 * (4 + 1 - 3) / 9)
    assert yules_k([1, 2, 3]) == 0.0
    for measure in (mattr, hdd, yules_k):
        assert measure([]) == 0.0
    # [1, 1, 2] vs [1, 2, 3]: type-token ratio 2/3 vs 1; HD-D (draw all 3) 2/3 vs 1; Yule's K 2222.2 vs 0
    gaps = lexical_gaps([1, 1, 2], [1, 2, 3])
    assert gaps == pytest.approx({"mattr_gap": 1 / 3, "hdd_gap": 1 / 3, "yules_k_gap": 10_000 * 2 / 9})


def test_the_gaps_compare_the_simulated_user_turns_with_every_real_user_turn(tiny_tokenizer):
    row = reference_row("mirrorbench")
    result, ctx = _run(tiny_tokenizer, row, lambda p, k: "slow slow slow")
    ids = lambda text: tiny_tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    proxy = ids("slow slow slow slow slow slow")  # two simulated user turns
    human = ids("my laptop is super slow like 5 years")  # both real user turns
    expected = lexical_gaps(proxy, human)
    for key, value in expected.items():
        assert result.metrics[f"mirrorbench/{key}"] == pytest.approx(value), key
    assert result.metrics["mirrorbench/yules_k_gap"] > 0
    assert result.reward == result.score  # logged only: the reward is the judge's score
