"""The judge client: JSON parsed and validated against a schema, bounded retries, failures counted (S1, S3)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass

from aiohttp import web
from task_fixtures import chat_server

from mimesis_pl.llm import RoleCallFailed, ServedChatSettings, reference_role
from mimesis_pl.tasks.clients import (
    JudgeRequest,
    OpenAIJudge,
    ScriptedJudge,
    parse_verdict,
    schema_hint,
)


@dataclass
class Verdict:
    exhibit: float
    announced: bool


def test_parse_verdict_validates_fields_and_types():
    assert parse_verdict('{"exhibit": 0.5, "announced": false, "extra": 1}', Verdict) == Verdict(0.5, False)
    assert parse_verdict('```json\n{"exhibit": 1, "announced": "true"}\n```', Verdict) == Verdict(1.0, True)
    assert parse_verdict('{"exhibit": 0.5}', Verdict) is None  # missing field
    assert parse_verdict('{"exhibit": "high", "announced": false}', Verdict) is None  # not a number
    assert parse_verdict('{"exhibit": true, "announced": false}', Verdict) is None  # a bool is not a score
    assert parse_verdict('{"exhibit": NaN, "announced": false}', Verdict) is None
    assert parse_verdict("[1, 2]", Verdict) is None
    assert parse_verdict("not json", Verdict) is None


@contextlib.asynccontextmanager
async def judge_server(replies):
    """Serves /v1/chat/completions from ``replies`` (strings = content, ints = HTTP status); the last repeats."""
    seen = []

    async def handle(request):
        body = await request.json()
        seen.append(body)
        reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if isinstance(reply, int):
            return web.json_response({"error": "x"}, status=reply)
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": reply}}]})

    async with chat_server(handle) as url:
        yield url, seen


def settings(url: str, retries: int = 2) -> ServedChatSettings:
    return reference_role(
        ServedChatSettings, url=url, model="judge-x", max_retries=retries, retry_backoff_s=0.0, reasoning_effort="low"
    )


def test_served_judge_retries_invalid_json_then_returns_a_typed_verdict():
    async def run():
        async with judge_server([503, "I think 0.7", '{"exhibit": 0.7, "announced": false}']) as (url, seen):
            judge = OpenAIJudge(settings(url), "judge")
            verdict = await judge.judge(JudgeRequest(messages=[{"role": "user", "content": "rate"}]), Verdict)
            await judge.aclose()
            return verdict, seen, judge.failures

    verdict, seen, failures = asyncio.run(run())
    assert verdict == Verdict(0.7, False) and failures == 0
    assert len(seen) == 3  # 503, unparsable, valid
    body = seen[-1]
    assert body["model"] == "judge-x" and body["response_format"] == {"type": "json_object"}
    assert body["reasoning_effort"] == "low"


def test_served_judge_gives_none_after_its_retry_bound_and_counts_the_failure():
    async def run():
        async with judge_server(['{"exhibit": "lots"}']) as (url, seen):
            judge = OpenAIJudge(settings(url, retries=1), "judge")
            verdict = await judge.judge(JudgeRequest(messages=[{"role": "user", "content": "rate"}]), Verdict)
            await judge.aclose()
            return verdict, len(seen), judge.failures

    assert asyncio.run(run()) == (None, 2, 1)


def test_empty_completion_is_an_error_not_an_empty_turn():
    async def run():
        async with judge_server(["   "]) as (url, _seen):
            judge = OpenAIJudge(settings(url, retries=0), "partner")
            try:
                await judge.complete([{"role": "user", "content": "hi"}])
            except RoleCallFailed as err:  # the ChatModel contract: raised, never None or ""
                text = str(err)
            await judge.aclose()
            return text, judge.failures

    text, failures = asyncio.run(run())
    assert "empty completion" in text and failures == 1


def test_scripted_judge_is_deterministic_and_fails_at_its_rate():
    transcript = [("CUSTOMER", "my jeans are too small and i want a return"), ("AGENT", "sure")]
    requests = [
        JudgeRequest(
            messages=[{"role": "user", "content": f"case {i}"}], transcript=transcript, goal="return due to size"
        )
        for i in range(200)
    ]
    judge = ScriptedJudge(failure_rate=0.25)
    verdicts = [asyncio.run(judge.judge(r, Verdict)) for r in requests]
    again = [asyncio.run(ScriptedJudge(failure_rate=0.25).judge(r, Verdict)) for r in requests]
    assert verdicts == again
    failed = sum(v is None for v in verdicts)
    assert failed == judge.failures and 30 < failed < 70  # ≈ 25 % of 200
    ok = next(v for v in verdicts if v is not None)
    assert ok == Verdict(exhibit=1.0, announced=False)
    assert json.dumps(judge.requests[0])  # requests are recorded for leak scans


@dataclass
class TenPoint:
    SCORE_RANGES = {"quality": (1.0, 10.0)}

    quality: float


def test_a_score_outside_the_asked_range_is_a_judge_failure_not_clamped():
    """#26 item 4: 1000 on 1–10 (or −1000) used to be read and then clamped to a valid reward (S1, S3, S60)."""
    assert parse_verdict('{"quality": 7}', TenPoint) == TenPoint(7.0)
    assert parse_verdict('{"quality": 1000}', TenPoint) is None
    assert parse_verdict('{"quality": -1000}', TenPoint) is None
    assert parse_verdict('{"quality": 0.5}', TenPoint) is None  # below the 1–10 scale
    assert parse_verdict('{"exhibit": 1.5, "announced": false}', Verdict) is None  # undeclared floats are 0–1
    assert parse_verdict('{"exhibit": Infinity, "announced": false}', Verdict) is None
    assert schema_hint(TenPoint) == '{"quality": <number 1-10>}'


def test_served_judge_retries_an_out_of_range_score_then_fails_counted():
    async def run():
        async with judge_server(['{"quality": 1000}']) as (url, seen):
            judge = OpenAIJudge(settings(url, retries=1), "judge")
            verdict = await judge.judge(JudgeRequest(messages=[{"role": "user", "content": "rate"}]), TenPoint)
            await judge.aclose()
            return verdict, len(seen), judge.failures

    assert asyncio.run(run()) == (None, 2, 1)


def test_scripted_judge_answers_inside_each_declared_range():
    request = JudgeRequest(messages=[{"role": "user", "content": "x"}], transcript=[("CUSTOMER", "short")], goal="")
    verdict = asyncio.run(ScriptedJudge().judge(request, TenPoint))
    assert 1.0 <= verdict.quality <= 10.0


def test_every_verdict_schema_of_the_tasks_declares_ranges_its_scorer_accepts():
    """No scorer clamps a judge score any more: each family's verdict declares its scale, and the scripted judge's
    answer at the top and bottom of every declared range scores inside [0, 1] (S60)."""
    from dataclasses import fields

    from mimesis_pl.tasks.clients import score_range
    from mimesis_pl.tasks.coser import CoserVerdict, coser_score
    from mimesis_pl.tasks.sim_arena import DocVerdict, MathVerdict, arena_score
    from mimesis_pl.tasks.sotopia import SotopiaVerdict, sotopia_score
    from mimesis_pl.tasks.usersim_behavior.prompts import BehaviorVerdict, ControlVerdict
    from mimesis_pl.tasks.usersim_behavior.reward import behavior_reward, control_reward

    for schema, score in [
        (CoserVerdict, coser_score),
        (SotopiaVerdict, sotopia_score),
        (MathVerdict, arena_score),
        (DocVerdict, arena_score),
        (BehaviorVerdict, behavior_reward),
        (ControlVerdict, control_reward),
    ]:
        for end in (0, 1):
            values = {
                f.name: (False if f.type in (bool, "bool") else score_range(schema, f.name)[end])
                for f in fields(schema)
            }
            assert 0.0 <= score(schema(**values)) <= 1.0, (schema.__name__, end)
        assert (
            score(
                schema(
                    **{
                        f.name: (False if f.type in (bool, "bool") else score_range(schema, f.name)[1])
                        for f in fields(schema)
                    }
                )
            )
            == 1.0
        ), schema.__name__
