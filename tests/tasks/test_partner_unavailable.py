"""A partner that is down (HTTP 500, garbage, connection refused) makes the rollout a ``task_error`` after the
client's bounded retries: unscored, untrained, counted in ``rollout/task_error_rate`` in training and
``val-core/all/task_error_rate`` in validation — never a short dialogue that the judge scores."""

from __future__ import annotations

import asyncio
import socket
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from reference_rows import reference_row
from task_fixtures import chat_server, make_context
from test_tasks_judge_client import settings

from mimesis_pl.tasks.clients import OpenAIChatModel
from mimesis_pl.tasks.runner import run_rows, step_metrics, validation_metrics, with_eval_context

PARTNER_FAMILIES = ("sotopia", "coser", "mirrorbench", "sim_arena_math", "sim_arena_doc")
REPLY = '{"action_type": "speak", "argument": "Message: Query: hello there"}'


async def _run_against(url: str, tokenizer, is_train: bool):
    ctx = make_context(tokenizer, lambda p, k: REPLY, enable_think=False, is_train=is_train)
    ctx.partner = OpenAIChatModel(settings(url, retries=1), "partner")
    if not is_train:
        ctx = with_eval_context(ctx)
    rows = [reference_row(s) for s in PARTNER_FAMILIES]
    try:
        return await run_rows(rows, 1, ctx, [f"g{i}" for i in range(len(rows))]), ctx
    finally:
        await ctx.partner.aclose()


@asynccontextmanager
async def partner_down(kind: str):
    """A loopback chat server that always fails: HTTP 500, or a 200 whose body is no chat completion."""

    async def handle(request):
        if kind == "http500":
            return web.json_response({"error": "internal"}, status=500)
        return web.Response(text="<html>bad gateway</html>", content_type="text/html")

    async with chat_server(handle) as url:
        yield url


def _free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.parametrize("kind", ["http500", "garbage"])
def test_a_partner_that_fails_makes_every_partner_family_a_task_error(tiny_tokenizer, kind):
    async def go():
        async with partner_down(kind) as url:
            return await _run_against(url, tiny_tokenizer, is_train=True)

    results, ctx = asyncio.run(go())
    assert [r.status for r in results] == ["task_error"] * len(PARTNER_FAMILIES), [r.error for r in results]
    assert all("PartnerUnavailable" in r.error and not r.trained for r in results)
    metrics = step_metrics(results)
    assert metrics["rollout/task_error_rate"] == 1.0
    assert all(metrics[f"rollout/{s}/task_error_rate"] == 1.0 for s in PARTNER_FAMILIES)
    assert ctx.partner.failures == len(PARTNER_FAMILIES)  # one call per rollout failed, each after its retries
    assert not ctx.judge.requests  # nothing was judged


def test_connection_refused_in_validation_is_counted_in_the_task_error_rate(tiny_tokenizer):
    results, _ = asyncio.run(_run_against(f"http://127.0.0.1:{_free_port()}/v1", tiny_tokenizer, is_train=False))
    assert {r.status for r in results} == {"task_error"}
    metrics = validation_metrics(results)
    assert metrics["val-core/all/task_error_rate"] == 1.0
    assert metrics["val-aux/sotopia/task_error/mean@1"] == 1.0
    assert not any(k.startswith("val-core/") and k.endswith("/reward/mean@1") for k in metrics)  # nothing scored
