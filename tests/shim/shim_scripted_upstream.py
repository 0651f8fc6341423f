"""A scripted OpenAI-compatible chat server for shim tests, served on loopback.

Each request's last message content is a JSON directive telling the server how to answer::

    {"say": "public text", "think": "private text", "mode": "inline", "delay": 0.05, "status": 500}

Modes: ``inline`` (``<think>…</think>`` in content), ``prefilled`` (closing tag only), ``truncated``
(unclosed opener), ``two_blocks``, ``reasoning_content`` / ``reasoning`` (vLLM out-of-band fields),
``none`` (no reasoning), ``tool_call`` (content null), ``not_json`` (a 200 with an HTML body),
``cut_json`` (a 200 whose JSON body is cut off inside the reasoning). A ``status`` >= 400 answers with
that status and an OpenAI-style error that echoes ``think`` when given. Every request body and its
Authorization header are recorded in ``requests``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from aiohttp import web


def directive(say: str, think: str | None = None, mode: str | None = None, **extra: Any) -> list[dict[str, str]]:
    """Messages for one request whose reply the scripted server will produce as described
    (``mode`` defaults to ``inline`` with a ``think`` and to ``none`` without)."""
    mode = mode or ("inline" if think is not None else "none")
    spec = {"say": say, "think": think, "mode": mode, **extra}
    return [{"role": "system", "content": "You are a user."}, {"role": "user", "content": json.dumps(spec)}]


def _message(spec: dict[str, Any]) -> dict[str, Any]:
    say, think, mode = spec.get("say", ""), spec.get("think"), spec.get("mode", "none")
    message: dict[str, Any] = {"role": "assistant", "content": say}
    if mode == "inline":
        message["content"] = f"<think>{think}</think>\n\n{say}"
    elif mode == "prefilled":
        message["content"] = f"{think}\n</think>\n\n{say}"
    elif mode == "truncated":
        message["content"] = f"{say}<think>{think}"
    elif mode == "two_blocks":
        message["content"] = f"<think>{think} A</think>{say}<think>{think} B</think>"
    elif mode in ("reasoning_content", "reasoning"):
        message[mode] = think
    elif mode == "tool_call":
        message["content"] = None
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {"name": "noop", "arguments": "{}"}}]
    elif mode != "none":
        raise ValueError(f"unknown scripted mode {mode!r}")
    return message


class ScriptedUpstream:
    """The scripted server; ``await start()`` returns its ``/v1`` base URL."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self._counter = 0

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.create_server(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append({"body": body, "authorization": request.headers.get("Authorization")})
        spec = json.loads(body["messages"][-1]["content"])
        if spec.get("delay"):
            await asyncio.sleep(float(spec["delay"]))
        if spec.get("status"):
            return web.json_response(
                {
                    "error": {
                        "message": f"scripted failure {spec['status']} {spec.get('think') or ''}".strip(),
                        "type": "server_error",
                    }
                },
                status=int(spec["status"]),
            )
        if spec.get("mode") == "not_json":
            return web.Response(text="<html>gateway page</html>", content_type="text/html")
        if spec.get("mode") == "cut_json":
            body = json.dumps({"choices": [{"message": {"content": f"<think>{spec.get('think')} and more"}}]})
            return web.Response(text=body[: body.index(" and more")], content_type="application/json")
        self._counter += 1
        message = _message(spec)
        return web.json_response(
            {
                "id": f"chatcmpl-scripted-{self._counter}",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else spec.get("finish", "stop"),
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )
