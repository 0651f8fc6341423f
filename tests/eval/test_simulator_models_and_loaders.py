"""The served SuiteModel against a loopback endpoint (sampling sent, empty replies retried, failures typed),
and the Turing / SOUL loaders' errors."""

from __future__ import annotations

import asyncio
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aiohttp import web

from mimesis_pl.eval.simulator.models import ServedChatModel
from mimesis_pl.eval.simulator.rows import DataFormatError
from mimesis_pl.eval.simulator.soul.data import load_soul_validation
from mimesis_pl.eval.simulator.turing.data import load_turing_rows
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import ServedChatSettings


async def _with_server(replies: list[dict], body_log: list[dict], action):
    async def completions(request: web.Request) -> web.Response:
        body_log.append(await request.json())
        reply = replies[min(len(body_log), len(replies)) - 1]
        return web.json_response({"choices": [{"message": reply}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        return await action(f"http://127.0.0.1:{port}/v1")
    finally:
        await runner.cleanup()


def test_served_model_sends_sampling_and_reattaches_reasoning():
    bodies: list[dict] = []

    async def action(url):
        settings = ServedChatSettings(
            base_url=url,
            model="judge-x",
            revision="r1",
            enable_thinking=False,
            reasoning_effort="none",
            extra_body={"top_p": 0.9},
        )
        model = ServedChatModel(settings, JudgeFailure)
        try:
            return await model.complete([{"role": "user", "content": "hi"}], temperature=0.001, max_tokens=77, seed=3)
        finally:
            await model.aclose()

    text = asyncio.run(_with_server([{"content": "hello", "reasoning_content": "private"}], bodies, action))
    assert text == "<think>\nprivate\n</think>\n\nhello"
    (body,) = bodies
    assert (body["model"], body["temperature"], body["max_tokens"], body["seed"], body["top_p"]) == (
        "judge-x",
        0.001,
        77,
        3,
        0.9,
    )
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and "reasoning_effort" not in body


def test_served_model_retries_empty_replies_then_raises_the_roles_failure():
    bodies: list[dict] = []

    async def action(url):
        model = ServedChatModel(ServedChatSettings(base_url=url, max_retries=1, retry_backoff_s=0.0), JudgeFailure)
        try:
            return await model.complete([{"role": "user", "content": "x"}], temperature=0.0, max_tokens=8)
        finally:
            await model.aclose()

    with pytest.raises(JudgeFailure, match="empty completion"):
        asyncio.run(_with_server([{"content": "  "}], bodies, action))
    assert len(bodies) == 2
    assert asyncio.run(_with_server([{"content": ""}, {"content": "ok"}], [], action)) == "ok"


def test_turing_rows_from_parquet_and_their_errors(tmp_path):
    with open("assets/data/eval/turing/prism_heldout.jsonl") as fh:
        row = json.loads(fh.readline())
    path = tmp_path / "heldout.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    (loaded,) = load_turing_rows([str(path)])
    assert loaded.key == "u1031/c5546/3" and loaded.ground_truth == "ok thanks, that helps"
    bad = {**row, "extra_info": {k: v for k, v in row["extra_info"].items() if k != "context"}}
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(DataFormatError, match=r"bad.jsonl:line 1: extra_info: missing string field 'context'"):
        load_turing_rows([str(tmp_path / "bad.jsonl")])
    (tmp_path / "bad.jsonl").write_text(json.dumps({**row, "reward_model": {"truth": "x"}}) + "\n")
    with pytest.raises(DataFormatError, match=r"reward_model: missing field 'ground_truth'"):
        load_turing_rows([str(tmp_path / "bad.jsonl")])


def test_soul_validation_parquets_grouped_and_checked(tmp_path):
    rows = [
        {"data_source": "hitom", "prompt": [{"role": "user", "content": "q"}], "extra_info": {"index": i}}
        for i in range(2)
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "hitom_val.parquet")
    assert [r.index for r in load_soul_validation([str(tmp_path)])["hitom"]] == [0, 1]
    pq.write_table(pa.Table.from_pylist([{**rows[0], "data_source": "hitomi"}]), tmp_path / "x_val.parquet")
    with pytest.raises(DataFormatError, match=r"x_val.parquet:row 0: data_source 'hitomi' is not a SOUL dataset"):
        load_soul_validation([str(tmp_path / "x_val.parquet")])
