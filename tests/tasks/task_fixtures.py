"""A text-scripted engine (token-in/token-out, like a real one) and a TaskContext around it."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable

from aiohttp import web

from mimesis_pl.rollout.engines import GenerationResult, SamplingParams
from mimesis_pl.tasks.base import TaskContext
from mimesis_pl.tasks.clients import ScriptedJudge, ScriptedPartner
from mimesis_pl.tasks.conversation import Policy
from mimesis_pl.tasks.usersim_behavior.support import ScriptedSupportAgent


class TextEngine:
    """Replies with ``respond(prompt_text, call_index)`` tokenised, plus the stop id (cut at max_new_tokens)."""

    def __init__(self, tokenizer, respond: Callable[[str, int], str]) -> None:
        self.tokenizer = tokenizer
        self.respond = respond
        self.prompts: list[str] = []

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        prompt = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        self.prompts.append(prompt)
        ids = self.tokenizer(self.respond(prompt, len(self.prompts) - 1), add_special_tokens=False)["input_ids"]
        ids = ids + [params.stop_token_ids[0]]
        if len(ids) > params.max_new_tokens:
            ids = ids[: params.max_new_tokens]
            return GenerationResult(ids, [-0.5] * len(ids), "length")
        return GenerationResult(ids, [-0.5] * len(ids), "stop")

    def update_weights(self, source) -> None:
        pass

    def sleep(self) -> None:
        pass

    def wake_up(self) -> None:
        pass

    def close(self) -> None:
        pass


def make_context(
    tokenizer, respond, *, is_train=True, enable_think=True, max_new_tokens=64, judge=None, max_length=4096
) -> TaskContext:
    engine = TextEngine(tokenizer, respond)
    sampling = SamplingParams(max_new_tokens=max_new_tokens, stop_token_ids=(tokenizer.eos_token_id,))
    return TaskContext(
        policy=Policy(engine, tokenizer, sampling, max_length=max_length),
        judge=judge or ScriptedJudge(),
        partner=ScriptedPartner(),
        support_agent=ScriptedSupportAgent(),
        is_train=is_train,
        enable_think=enable_think,
    )


@contextlib.asynccontextmanager
async def chat_server(handle):
    """A loopback ``/v1/chat/completions`` served by the aiohttp handler ``handle``; yields its base URL."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
