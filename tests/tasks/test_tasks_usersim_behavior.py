"""usersim-behavior: reward weights, the verification prefix, rules, and the leak guard on real rollouts."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from aiohttp import web
from task_fixtures import chat_server, make_context

from mimesis_pl.llm import ServedChatSettings, reference_role
from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.clients import ScriptedJudge
from mimesis_pl.tasks.runner import run_row, step_metrics, validation_metrics
from mimesis_pl.tasks.usersim_behavior.abcd import AbcdData
from mimesis_pl.tasks.usersim_behavior.behaviors import (
    BEHAVIORS,
    TRACE_BEHAVIOURS,
    Scene,
    get_behavior,
)
from mimesis_pl.tasks.usersim_behavior.prompts import BehaviorVerdict, ControlVerdict
from mimesis_pl.tasks.usersim_behavior.reward import behavior_reward, control_reward
from mimesis_pl.tasks.usersim_behavior.support import OpenAISupportAgent, SupportAgentUnavailable, clean_reply

SECRET = "PRIVATE-PLAN-7781"
SCENARIO = {
    "personal": {"customer_name": "dana lee", "member_level": "bronze", "username": "dlee4", "email": "dana@mail.test"},
    "order": {"order_id": "5512038841", "payment_method": "paypal"},
    "product": {"names": ["jeans"]},
}


def row(behavior: str | None, kwargs: dict | None = None, budget: int = 2) -> dict:
    return {
        "data_source": "usersim-behavior",
        "extra_info": {
            "index": 17,
            "flow": "product_defect",
            "subflow": "return_size",
            "turn_budget": budget,
            "behavior_ids": json.dumps([behavior] if behavior else []),
            "kwargs": json.dumps([kwargs or {}] if behavior else []),
            "scenario": json.dumps(SCENARIO),
        },
    }


def test_reward_weights_hand_worked():
    # (2·1 + 1.5·0.5 + 1·1 + 0.5·0) / 5 = 3.75 / 5 = 0.75; announced halves it
    assert behavior_reward(BehaviorVerdict(1.0, 0.5, 1.0, 0.0, False)) == pytest.approx(0.75)
    assert behavior_reward(BehaviorVerdict(1.0, 0.5, 1.0, 0.0, True)) == pytest.approx(0.375)
    # (2·1 + 1·0.5 + 0.5·1) / 3.5 = 3 / 3.5
    assert control_reward(ControlVerdict(1.0, 0.5, 1.0)) == pytest.approx(3 / 3.5)


def test_registry_and_rules():
    assert len(BEHAVIORS) == 13 and {b.name for b in BEHAVIORS.values() if b.needs_trace} == TRACE_BEHAVIOURS
    premise = get_behavior("fabricated_or_false_premise")
    kw = {"field": "member_level", "true_value": "bronze", "false_value": "gold"}
    s = Scene(AbcdData.load(), "product_defect", "return_size", SCENARIO)
    assert premise.check_rule([("user", "i am a gold member")], s, kw) == 1.0
    assert premise.check_rule([("user", "gold member, well bronze")], s, kw) == 0.5
    assert premise.check_rule([("user", "hi")], s, kw) == 0.0
    assert get_behavior("abrupt_intent_switching").check_rule([("user", "x")], s, {}) is None
    with pytest.raises(KeyError, match="known behaviours"):
        get_behavior("nope")


def test_verification_prefix_and_support_reply_cleaning():
    turns = AbcdData.load().verification_prefix(SCENARIO, "product_defect", "return_size")
    assert [r for r, _ in turns] == ["user", "agent", "user", "agent", "user", "agent"]
    assert turns[2][1] == "dana lee" and turns[4][1] == "dlee4, dana@mail.test, 5512038841"
    assert clean_reply("AGENT: " + "hello there, how are you" * 2) == "hello there, how are you"


def reply_with_thought(prompt: str, k: int) -> str:
    return f"\n{SECRET} I will say gold to get the 90 days\n</think>\n\ni am a gold member, my jeans are too small"


@pytest.mark.parametrize("behavior", ["fabricated_or_false_premise", "hidden_evaluation_criteria", None])
def test_private_reasoning_never_reaches_the_support_agent_and_reaches_the_judge_only_for_trace(
    tiny_tokenizer, behavior
):
    ctx = make_context(tiny_tokenizer, reply_with_thought, enable_think=True, max_new_tokens=64)
    kwargs = {
        "fabricated_or_false_premise": {"field": "member_level", "true_value": "bronze", "false_value": "gold"},
        "hidden_evaluation_criteria": {"field": "payment_method", "criterion": "refund to the original method"},
    }.get(behavior)
    result = asyncio.run(get_task("usersim-behavior").run(row(behavior, kwargs), ctx, group_id="g", gen_uid="g-0"))
    assert result.status == "ok" and result.metrics["usersim_behavior/n_sim_turns"] == 2.0
    support_requests = json.dumps(list(ctx.support_agent.requests))
    assert ctx.support_agent.requests and SECRET not in support_requests
    assert "i am a gold member" in support_requests
    judged = json.dumps(list(ctx.judge.requests))
    assert (SECRET in judged) == (behavior in TRACE_BEHAVIOURS)
    # only the generated span is judged: the seeded identity turns are context, named as such
    content = ctx.judge.requests[0][0]["content"]
    opening, scored = content.split("Conversation to score:")
    assert "dlee4" in opening and "dlee4" not in scored and "i am a gold member" in scored
    # seeded turns carry no gradient: the trained tokens are exactly the two generated turns
    t = result.trajectory
    assert t.num_turns == 2 and sum(t.response_mask) == sum(s.end - s.start for s in t.turn_spans)
    assert result.metrics["all/format_correct"] == 1.0


@pytest.mark.parametrize(
    "respond, max_new_tokens",
    [
        (lambda p, k: "<think>never closes the think block", 64),  # no </think> (untagged is read whole, S78)
        (lambda p, k: "<think>" + "a long plan " * 40 + "</think> hi", 16),  # cut by the length cap before the close
    ],
)
def test_a_malformed_first_turn_is_reward_0_and_kept_in_its_group(tiny_tokenizer, respond, max_new_tokens):
    """#23 item 4: the reference gives reward 0 and keeps the row; it used to be ``no_turns`` and dropped (S61)."""
    ctx = make_context(tiny_tokenizer, respond, enable_think=True, max_new_tokens=max_new_tokens)
    task = get_task("usersim-behavior")
    result = asyncio.run(task.run(row("request_overloading", {"n_requests": 3}), ctx, group_id="g", gen_uid="0"))
    assert result.status in ("ok", "truncated") and result.trained
    assert result.reward == 0.0 and result.score == 0.0 and not ctx.judge.requests
    assert result.metrics["usersim_behavior/malformed_turn"] == 1.0
    assert result.metrics["usersim_behavior/n_sim_turns"] == 0.0
    assert result.trajectory.num_turns == 1  # the malformed turn itself is what the zero teaches against
    good = asyncio.run(task.run(row(None), make_context(tiny_tokenizer, reply_with_thought), group_id="h", gen_uid="0"))
    assert good.status == "ok" and good.score > 0
    val = validation_metrics([result, good])
    assert val["val-core/usersim-behavior/reward/mean@1"] == pytest.approx(good.score / 2)
    assert val["val-core/all/score_v3"] == pytest.approx(good.score / 2)  # the headline counts it too
    assert val["val-aux/usersim-behavior/usersim_behavior/malformed_turn/mean@1"] == 0.5
    assert step_metrics([result, good])["rollout/no_turns_rate"] == 0.0


def test_judge_failure_is_flagged_not_scored(tiny_tokenizer):
    failing = make_context(tiny_tokenizer, reply_with_thought, judge=ScriptedJudge(failure_rate=1.0))
    result = asyncio.run(get_task("usersim-behavior").run(row(None), failing, group_id="g", gen_uid="0"))
    assert result.status == "judge_failed" and not result.trained and failing.judge.failures == 1


@contextlib.asynccontextmanager
async def http_500_server():
    """A loopback OpenAI-compatible endpoint that answers every chat completion with HTTP 500."""
    hits = []

    async def handle(request):
        hits.append(await request.json())
        return web.json_response({"error": "down"}, status=500)

    async with chat_server(handle) as url:
        yield url, hits


def test_a_failed_support_agent_call_is_a_task_error_not_a_short_scored_episode(tiny_tokenizer):
    """#26 item 1: with the served support agent down, the episode used to end after one simulator turn and be
    judged and trained (reward ~0.9); now it is a counted ``task_error`` (docs/decisions.md S5, S62)."""

    async def run():
        async with http_500_server() as (url, hits):
            ctx = make_context(tiny_tokenizer, reply_with_thought)
            settings = reference_role(ServedChatSettings, url=url, model="agent-x", max_retries=1, retry_backoff_s=0.0)
            ctx.support_agent = OpenAISupportAgent(settings)
            result = await run_row(row(None, budget=3), ctx, "g", "g-0", None)
            await ctx.support_agent.aclose()
            return result, len(hits), ctx

    result, n_hits, ctx = asyncio.run(run())
    assert n_hits == 2  # one call, retried once, then given up
    assert result.status == "task_error" and not result.trained
    assert "support agent" in result.error and not ctx.judge.requests
    assert step_metrics([result])["rollout/task_error_rate"] == 1.0
    with pytest.raises(SupportAgentUnavailable):
        raise SupportAgentUnavailable("x")


def test_several_behaviours_in_one_row_are_a_row_error(tiny_tokenizer):
    bad = row("request_overloading")
    bad["extra_info"]["behavior_ids"] = json.dumps(["request_overloading", "self_contradiction"])
    ctx = make_context(tiny_tokenizer, reply_with_thought)
    result = asyncio.run(run_row(bad, ctx, "g", "g-0", None))
    assert result.status == "task_error" and "one (or none)" in result.error
    wrong = row("fabricated_or_false_premise", {"colour": "red"})
    result = asyncio.run(run_row(wrong, ctx, "g", "g-0", None))
    assert result.status == "task_error" and "kwargs do not fit" in result.error


@pytest.mark.parametrize("enable_think", [True, False])
def test_the_trajectory_is_token_for_token_the_served_render(tiny_tokenizer, enable_think):
    """Prompt, replayed seed turns, generated turns and agent replies equal one full render (docs/decisions.md S13)."""
    from mimesis_pl.chat import ChatRenderer

    respond = reply_with_thought if enable_think else (lambda p, k: "i am a gold member, my jeans are too small")
    ctx = make_context(tiny_tokenizer, respond, enable_think=enable_think)
    result = asyncio.run(get_task("usersim-behavior").run(row(None), ctx, group_id="g", gen_uid="0"))
    ids, messages = result.trajectory.input_ids, result.trajectory.messages
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    full = ChatRenderer(tiny_tokenizer, enable_thinking=enable_think).render(messages[: last + 1]).input_ids
    assert full[: len(ids)] == ids
    assert tiny_tokenizer.decode(full[len(ids) :]) == "\n"  # only the separator after the last generated turn


def test_selfcheck_every_applicable_behaviour_derives_kwargs_renders_a_hint_and_bounds_its_rule():
    import random

    data = AbcdData.load()
    public = [
        ("user", "i am a GOLD member and i want it NOW"),
        ("agent", "Sorry, that is not possible."),
        ("user", "can you check it and also send a label? please hurry"),
    ]
    applicable = 0
    scene = Scene(data, "product_defect", "return_size", SCENARIO)
    for behavior in BEHAVIORS.values():
        if not behavior.applicable(scene):
            continue
        applicable += 1
        kwargs = behavior.derive_kwargs(scene, random.Random(0))
        assert behavior.build_hint(**kwargs).strip(), behavior.name
        rule = behavior.check_rule(public, scene, kwargs)
        assert rule is None or 0.0 <= rule <= 1.0, behavior.name
    assert applicable == 13  # the stand-in's return_size has a hard limit and every field some behaviours need
    nowhere = Scene(data, "product_defect", "no_such_subflow", SCENARIO)
    assert not get_behavior("request_overloading").applicable(nowhere)
