"""A scripted OpenAI-compatible judge on loopback for the gym tests: ``answer(messages)`` gives the reply
content (a string) or an HTTP status (an int); every request body is kept in ``bodies``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

from aiohttp import web

Answer = Callable[[list[dict[str, str]]], "str | int"]


class ServedJudge:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.bodies: list[dict] = []
        self.url = ""

    def settings(self, **extra) -> dict:
        """The gym option ``judge:`` as YAML would give it."""
        fields = {"url": self.url, "model": "judge-x", "max_retries": 2, "retry_backoff_s": 0.0} | extra
        return {"class_path": "ServedChatSettings", "init_args": fields}

    def texts(self) -> list[str]:
        """Every request as one text (system + user messages)."""
        return ["\n".join(m["content"] for m in body["messages"]) for body in self.bodies]


def reply(data: dict) -> str:
    return "```json\n" + json.dumps(data) + "\n```"


@contextlib.asynccontextmanager
async def served_judge(answer: Answer):
    judge = ServedJudge(answer)

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        judge.bodies.append(body)
        out = judge.answer(body["messages"])
        if isinstance(out, int):
            return web.json_response({"error": {"message": "scripted failure"}}, status=out)
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": out}}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    judge.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
    try:
        yield judge
    finally:
        await runner.cleanup()
