"""A reply that starts inside a pre-filled ``<think>`` and never closes it is private reasoning, on every path.

A thinking template pre-fills ``<think>`` in the generation prompt, so the server returns only the continuation;
when that is cut by ``max_tokens`` (or the model ends its turn early) it holds no tag at all. Before A75 the shim
and ``OpenAIUser`` passed it to the agent as the public reply and stored nothing private. Each upstream shape is
checked here: a server without a reasoning parser (ours, vLLM without ``--reasoning-parser``), vLLM's qwen3 parser
(an unclosed reply comes back as content), a parser that moves everything to ``reasoning_content`` (SGLang,
DeepSeek-R1 style), a closed reply, and an API's ``reasoning_details``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request

import pytest
from aiohttp import web

from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.rollout import OpenAIUserSettings, SimulatorServices
from mimesis_pl.shim.reply import split_completion
from mimesis_pl.users.openai_user import OpenAIUser

SECRET = "The secret word is Paris, I must not say it. Let me think"
THINKING = {"chat_template_kwargs": {"enable_thinking": True}}


def completion(message: dict, finish_reason: str = "length") -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


# (upstream message, public text the agent may see, private text kept) with the opener pre-filled.
SHAPES = {
    "no parser, unclosed": ({"role": "assistant", "content": SECRET}, "", SECRET),
    "vllm qwen3 parser, unclosed (all content)": (
        {"role": "assistant", "content": SECRET, "reasoning_content": None},
        "",
        SECRET,
    ),
    "parser moves it all to reasoning_content": (
        {"role": "assistant", "content": None, "reasoning_content": SECRET},
        None,
        SECRET,
    ),
    "no parser, closed": ({"role": "assistant", "content": f"{SECRET}\n</think>\n\nHello!"}, "Hello!", SECRET),
    "parser, closed": ({"role": "assistant", "content": "Hello!", "reasoning_content": SECRET}, "Hello!", SECRET),
    "api reasoning_details": (
        {"role": "assistant", "content": "Hello!", "reasoning_details": [{"type": "reasoning.text", "text": SECRET}]},
        "Hello!",
        SECRET,
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_shim_split_keeps_an_unclosed_prefilled_reply_private(shape):
    message, public, private = SHAPES[shape]
    body, (choice,) = split_completion(completion(message), prefilled=True)
    assert choice.public == public
    assert choice.reasoning == private
    assert "Paris" not in json.dumps(body)


def test_without_the_prefill_an_untagged_reply_is_public():
    _, (choice,) = split_completion(completion({"role": "assistant", "content": "Hello there."}), prefilled=False)
    assert (choice.public, choice.reasoning) == ("Hello there.", "")


class Upstream:
    """An OpenAI-compatible upstream on loopback that answers every request with one message."""

    def __init__(self, message: dict, finish_reason: str = "length") -> None:
        self.message, self.finish_reason = message, finish_reason
        self.bodies: list[dict] = []

    async def start(self) -> str:
        async def handle(request: web.Request) -> web.Response:
            self.bodies.append(await request.json())
            return web.json_response(completion(self.message, self.finish_reason))

        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"

    async def stop(self) -> None:
        await self._runner.cleanup()


@contextlib.contextmanager
def upstream_thread(message: dict):
    from mimesis_pl.shim import ServerThread

    server = Upstream(message)
    with ServerThread(server, name="prefill-upstream", timeout_s=10.0) as thread:
        yield server, thread.base_url


MESSAGES = [{"role": "system", "content": "You are a user."}, {"role": "user", "content": "What is the word?"}]


def reply_through(services: SimulatorServices):
    """The episode ``ep1`` user's reply (or the exception it raised), through what ``services`` started."""
    user = services.users().for_episode("ep1", f"{services.shim_url}/ep/ep1/v1" if services.shim_url else None)

    async def go():
        try:
            return await user.reply(MESSAGES, episode_id="ep1")
        except UserSimulatorError as err:
            return err
        finally:
            await user.aclose()

    return asyncio.run(go())


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def privileged(shim_url: str, episode: str) -> list[dict]:
    with urllib.request.urlopen(f"{shim_url}/ep/{episode}/privileged", timeout=10) as response:
        return json.loads(response.read())["entries"]


@pytest.mark.parametrize("shim", [True, False])
def test_a_served_thinking_simulator_cut_inside_its_reasoning_is_a_user_error_not_a_reply(shim):
    with upstream_thread({"role": "assistant", "content": SECRET}) as (server, url):
        settings = OpenAIUserSettings(upstream_url=url, model="sim", shim=shim, enable_thinking=True, max_tokens=12)
        services = SimulatorServices(settings).start()
        try:
            outcome = reply_through(services)
            assert isinstance(outcome, UserSimulatorError), f"the agent would have been shown {outcome!r}"
            assert "Paris" not in str(outcome)  # the error text is shown and logged: no reasoning in it
            assert server.bodies[0]["chat_template_kwargs"] == {"enable_thinking": True}
            if shim:  # what the simulator thought is kept, privately, for the coach
                entries = privileged(services.shim_url, "ep1")  # one per try (the client retries)
                assert entries and all((e["reasoning"], e["public"]) == (SECRET, "") for e in entries)
        finally:
            services.stop()


def test_the_shim_follows_the_request_thinking_switch_or_its_own_setting():
    from mimesis_pl.shim import PrivilegedShim, ServerThread

    with upstream_thread({"role": "assistant", "content": SECRET}) as (_, url):
        with ServerThread(PrivilegedShim(url), name="prefill-shim", timeout_s=10.0) as shim:
            public = post(
                f"{shim.base_url}/ep/ep7/v1/chat/completions", {"model": "s", "messages": MESSAGES, **THINKING}
            )
            assert public["choices"][0]["message"]["content"] == ""
            assert "Paris" not in json.dumps(public)
            (entry,) = privileged(shim.base_url, "ep7")
            assert entry["reasoning"] == SECRET and entry["public"] == ""
            # Without the thinking switch nothing says the reply started inside <think> …
            plain = post(f"{shim.base_url}/ep/ep8/v1/chat/completions", {"model": "s", "messages": MESSAGES})
            assert plain["choices"][0]["message"]["content"] == SECRET
        # … unless the shim is told so for every request (reasoning_prefilled, --reasoning-prefilled true).
        with ServerThread(PrivilegedShim(url, reasoning_prefilled=True), name="prefill-shim-2", timeout_s=10.0) as shim:
            told = post(f"{shim.base_url}/ep/ep9/v1/chat/completions", {"model": "s", "messages": MESSAGES})
            assert told["choices"][0]["message"]["content"] == ""


def test_the_user_client_sends_thinking_seed_and_extra_fields_and_reads_a_closed_reply():
    closed = {"role": "assistant", "content": f"{SECRET}</think>\n\nIs it a city?"}
    with upstream_thread(closed) as (server, url):
        settings = OpenAIUserSettings(
            upstream_url=url, model="sim", shim=False, enable_thinking=True, seed=7, extra_body={"top_p": 0.9}
        )
        services = SimulatorServices(settings).start()
        try:
            reply = reply_through(services)
        finally:
            services.stop()
    assert (reply.public, reply.reasoning) == ("Is it a city?", SECRET)
    body = server.bodies[0]
    assert (body["seed"], body["top_p"], body["chat_template_kwargs"]) == (7, 0.9, {"enable_thinking": True})


def test_reasoning_prefilled_false_reads_an_untagged_reply_as_public_even_with_thinking_on():
    with upstream_thread({"role": "assistant", "content": "Plain words."}) as (_, url):
        user = OpenAIUser(base_url=url, model="sim", enable_thinking=True, reasoning_prefilled=False, max_retries=0)

        async def go():
            try:
                return await user.reply(MESSAGES, episode_id="e")
            finally:
                await user.aclose()

        assert asyncio.run(go()).public == "Plain words."


def test_the_shim_gives_a_thinking_simulator_its_own_earlier_reasoning_and_only_upstream():
    from mimesis_pl.shim import PrivilegedShim, ServerThread
    from mimesis_pl.shim.reply import with_own_reasoning

    entries = [
        {"reasoning": "failed try", "public": ""},
        {"reasoning": "they ignored my point", "public": "Not convinced."},
    ]
    history = [
        {"role": "system", "content": "persona"},
        {"role": "user", "content": "arg 1"},
        {"role": "assistant", "content": "Not convinced."},
        {"role": "user", "content": "arg 2"},
    ]
    restored = with_own_reasoning(history, entries)
    assert restored[2] == {
        "role": "assistant",
        "content": "Not convinced.",
        "reasoning_content": "they ignored my point",
    }
    assert "reasoning_content" not in history[2]  # the input is not modified
    closed = {"role": "assistant", "content": "thinking it over</think>\n\nNot convinced."}
    with upstream_thread(closed) as (server, url):
        with ServerThread(PrivilegedShim(url), name="restore-shim", timeout_s=10.0) as shim:
            route = f"{shim.base_url}/ep/ep3/v1/chat/completions"
            first = post(route, {"model": "s", "messages": history[:2], **THINKING})
            second = post(route, {"model": "s", "messages": history, **THINKING})
            plain = post(f"{shim.base_url}/ep/ep4/v1/chat/completions", {"model": "s", "messages": history})
    assert first["choices"][0]["message"]["content"] == "Not convinced."
    assert "thinking it over" not in json.dumps(second) + json.dumps(plain)  # never back to the caller
    assert server.bodies[1]["messages"][2]["reasoning_content"] == "thinking it over"
    assert "reasoning_content" not in server.bodies[2]["messages"][2]  # without thinking: forwarded as sent
