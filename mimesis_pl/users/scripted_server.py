"""The scripted user served as an OpenAI-compatible chat endpoint (offline stand-in for a served simulator).

Replies come back as a reasoning model writes them, ``<think>…</think>`` then the public text, so the
privileged shim in front of it has real reasoning to split off. Routes: ``POST /v1/chat/completions``
and ``GET /v1/models``. Binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from aiohttp import web

from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.users.scripted import ScriptedUser

MODEL_NAME = "scripted-user"


def make_scripted_app(user: ScriptedUser | None = None, *, model_name: str = MODEL_NAME) -> web.Application:
    """An aiohttp application answering chat completions with the scripted user's rules."""
    scripted = user or ScriptedUser()
    app = web.Application()

    async def completions(request: web.Request) -> web.Response:
        try:
            body: Any = await request.json()
        except ValueError:
            return _error(400, "request body is not JSON")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return _error(400, "field 'messages' must be a list of {role, content} objects")
        try:
            text = scripted.respond_text(messages)
        except UserSimulatorError as err:
            return _error(422, str(err))
        return web.json_response(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or model_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            }
        )

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": model_name, "object": "model"}]})

    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/v1/models", models)
    return app


async def start_scripted_server(
    host: str = "127.0.0.1", port: int = 0, *, user: ScriptedUser | None = None
) -> tuple[web.AppRunner, str]:
    """Start the server; returns ``(runner, base_url)`` with ``base_url`` ending in ``/v1``.

    ``port=0`` picks a free port. Stop it with ``await runner.cleanup()``.
    """
    runner = web.AppRunner(make_scripted_app(user))
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    server = site._server  # aiohttp exposes the bound socket only here
    bound_port = server.sockets[0].getsockname()[1] if server is not None and server.sockets else port
    return runner, f"http://{host}:{bound_port}/v1"


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)
