"""OpenAIChatAgent against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from aiohttp import web

from mimesis_pl.eval import AgentTransportFailure, RetryPolicy
from mimesis_pl.eval.replay import OpenAIChatAgent, ReplayExecutor, load_cases, parse_case, project

REPLIES: dict[str, Any] = {
    "structured": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "x1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Berlin", "units": "metric"}'},
            }
        ],
    },
    "text-call": {
        "role": "assistant",
        "content": (
            '<think>need data</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n'
            "</tool_call>"
        ),
    },
    "final": {"role": "assistant", "content": "It is sunny.", "reasoning_content": "easy one"},
    "bad-args": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "x2", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Berlin"}}
        ],
    },
    "error": 500,
}


class ScriptedChatServer:
    """Answers by the last user message (a key of REPLIES); records every request body and auth header."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.complete)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        sock = socket.create_server(("127.0.0.1", 0))
        await web.SockSite(self.runner, sock).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()

    async def complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        self.auth.append(request.headers.get("Authorization"))
        key = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        reply = REPLIES[key]
        if isinstance(reply, int):
            return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=reply)
        return web.json_response(
            {
                "id": "cmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
            }
        )


def _plan(user: str):
    raw = {
        "id": user,
        "system": "Be brief.",
        "context": {"now": "2026-05-12T08:00:00Z", "locale": "de-DE"},
        "tools": [
            {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
        ],
        "turns": [
            {
                "user": user,
                "paths": [
                    {
                        "id": "call",
                        "preferred": True,
                        "steps": [
                            {"expect": {"tool": "get_weather", "args": {"city": "Berlin"}, "allow_extra_args": True}}
                        ],
                    },
                    {"id": "say", "steps": [{"expect": {"final": True, "contains_any": ["sunny"]}}]},
                ],
            }
        ],
    }
    return project(parse_case(raw))


async def _decide(user: str, **agent_kwargs):
    server = ScriptedChatServer()
    async with server as base_url:
        async with OpenAIChatAgent(base_url, "agent-under-test", **agent_kwargs) as agent:
            decision = await agent.decide(_plan(user).requests[0])
    return decision, server


def test_structured_tool_call_and_what_is_sent() -> None:
    decision, server = asyncio.run(_decide("structured", api_key="sk-test"))
    assert [(c.name, c.arguments) for c in decision.tool_calls] == [
        ("get_weather", {"city": "Berlin", "units": "metric"})
    ]
    (body,) = server.bodies
    assert body["model"] == "agent-under-test" and body["temperature"] == 0.0 and body["tool_choice"] == "auto"
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert [m["role"] for m in body["messages"]] == ["system", "system", "user"]
    assert body["messages"][1]["content"] == 'Request context (JSON): {"locale":"de-DE","now":"2026-05-12T08:00:00Z"}'
    assert server.auth == ["Bearer sk-test"]


def test_text_tool_calls_final_replies_and_bad_arguments(monkeypatch) -> None:
    monkeypatch.setenv("AGENT_KEY_FOR_TEST", "sk-env")
    text_call, server = asyncio.run(_decide("text-call", api_key_env="AGENT_KEY_FOR_TEST", context_mode="none"))
    assert [(c.name, c.arguments) for c in text_call.tool_calls] == [("get_weather", {"city": "Berlin"})]
    assert text_call.reasoning == "need data"
    assert server.auth == ["Bearer sk-env"]
    assert [m["role"] for m in server.bodies[0]["messages"]] == ["system", "user"]

    final, _ = asyncio.run(_decide("final"))
    assert final.is_final and final.text == "It is sunny." and final.reasoning == "easy one"
    bad, _ = asyncio.run(_decide("bad-args"))
    assert bad.parse_error and "arguments are not JSON" in bad.parse_error and not bad.is_final


def test_missing_key_variable_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_AGENT_KEY", raising=False)
    with pytest.raises(ValueError, match="'NO_SUCH_AGENT_KEY'"):
        OpenAIChatAgent("http://127.0.0.1:1/v1", "m", api_key_env="NO_SUCH_AGENT_KEY")


def test_server_errors_become_unscored_records_after_retries() -> None:
    async def main():
        server = ScriptedChatServer()
        async with server as base_url:
            async with OpenAIChatAgent(base_url, "m") as agent:
                with pytest.raises(AgentTransportFailure, match="request 'error:t0:s0:h0' failed"):
                    await agent.decide(_plan("error").requests[0])
                run = await ReplayExecutor(agent, retry=RetryPolicy(max_attempts=2, backoff_s=0)).run([_plan("error")])
        return run, server

    run, server = asyncio.run(main())
    assert len(server.bodies) == 1 + 2
    (record,) = run.records
    assert (record.status, record.failure, record.agent_calls) == ("unscored", "agent_transport", 2)


def test_end_to_end_alternative_match_through_http() -> None:
    async def main():
        server = ScriptedChatServer()
        async with server as base_url:
            async with OpenAIChatAgent(base_url, "m") as agent:
                run = await ReplayExecutor(agent).run([_plan("final"), _plan("structured")])
        return run, server

    run, server = asyncio.run(main())
    assert [(r.passed, r.matched) for r in run.records] == [(True, ("say",)), (True, ("call",))]
    assert len(server.bodies) == 2  # one HTTP call per request
    assert json.loads(json.dumps(run.records[0].decision.to_dict()))["text"] == "It is sunny."


def test_sample_case_requests_are_valid_openai_payloads() -> None:
    # Every sample request renders to JSON, and the agent adds only the context message.
    agent = OpenAIChatAgent("http://127.0.0.1:1/v1", "m")
    for case in load_cases("assets/replay"):
        for request in project(case).requests:
            messages = agent.build_messages(request)
            assert len(messages) == len(request.messages) + (1 if request.context else 0)
            json.dumps(messages)
