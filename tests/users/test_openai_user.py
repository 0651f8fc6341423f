"""OpenAIUser against a small scripted OpenAI-compatible server on 127.0.0.1 (written here with aiohttp)."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
from aiohttp import web

from mimesis_pl.envs import Action, EnvironmentManager, GymTask, Termination
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.users.openai_user import OpenAIUser
from mimesis_pl.users.scripted import ScriptedUser

KIWI = "Kiwi - a small, brown, fuzzy fruit with bright green flesh."


class StubServer:
    """Answers /v1/chat/completions and /ep/{episode}/v1/chat/completions from a queue of scripted behaviours.

    A behaviour is ``("status", code)``, ``("content", text)``, ``("message", dict)``, ``("raw", text)``
    or ``("scripted", None)`` (reply with the scripted user's rules, reasoning inlined as <think>).
    The last behaviour repeats.
    """

    def __init__(self, *behaviours):
        self.behaviours = list(behaviours) or [("scripted", None)]
        self.requests: list[dict] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(
            {
                "path": request.path,
                "episode": request.match_info.get("episode"),
                "auth": request.headers.get("Authorization"),
                "body": body,
            }
        )
        kind, value = self.behaviours.pop(0) if len(self.behaviours) > 1 else self.behaviours[0]
        if kind == "status":
            return web.json_response({"error": {"message": "scripted failure"}}, status=value)
        if kind == "raw":
            return web.Response(text=value, content_type="text/plain")
        if kind == "scripted":
            message = {"role": "assistant", "content": ScriptedUser().respond_text(body["messages"])}
        elif kind == "content":
            message = {"role": "assistant", "content": value}
        else:
            message = value
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )

    @contextlib.asynccontextmanager
    async def running(self):
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        app.router.add_post("/ep/{episode}/v1/chat/completions", self.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            await runner.cleanup()


MESSAGES = [{"role": "system", "content": "You are a user."}, {"role": "user", "content": "Hello?"}]


def ask(server: StubServer, **user_kwargs):
    async def go():
        async with server.running():
            user = OpenAIUser(base_url=f"{server.url}/v1", model="sim", retry_backoff_s=0.01, **user_kwargs)
            try:
                return await user.reply(MESSAGES, episode_id="e1")
            finally:
                await user.aclose()

    return asyncio.run(go())


def test_reply_splits_inline_reasoning_and_sends_the_request_as_configured():
    server = StubServer(("content", "<think>secret plan</think>Hi there."))
    reply = ask(server, temperature=0.3, max_tokens=77, extra_body={"top_p": 0.9})
    assert (reply.public, reply.reasoning) == ("Hi there.", "secret plan")
    body = server.requests[0]["body"]
    assert body == {"model": "sim", "messages": MESSAGES, "temperature": 0.3, "max_tokens": 77, "top_p": 0.9}
    assert server.requests[0]["auth"] is None


def test_reasoning_fields_of_reasoning_parsers_are_kept_private():
    reply = ask(StubServer(("message", {"role": "assistant", "content": "Sure.", "reasoning_content": "hidden"})))
    assert (reply.public, reply.reasoning) == ("Sure.", "hidden")
    reply = ask(StubServer(("message", {"role": "assistant", "content": "Sure.", "reasoning": "also hidden"})))
    assert reply.reasoning == "also hidden"


def test_retryable_failures_are_retried_then_succeed():
    server = StubServer(("status", 503), ("status", 429), ("content", "Fine."))
    assert ask(server, max_retries=2).public == "Fine."
    assert len(server.requests) == 3


def test_client_errors_fail_at_once():
    server = StubServer(("status", 400))
    with pytest.raises(UserSimulatorError, match="HTTP 400"):
        ask(server, max_retries=3)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("behaviour", "match"),
    [
        (("content", "<think>only thinking</think>"), "no public text"),
        (("raw", "not json"), "non-JSON"),
        (("status", 502), "HTTP 502"),
    ],
)
def test_unusable_replies_raise_after_the_retries(behaviour, match):
    server = StubServer(behaviour)
    with pytest.raises(UserSimulatorError, match=match):
        ask(server, max_retries=1)
    assert len(server.requests) in (1, 2)


def test_api_key_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("SIM_TEST_KEY", "abc123")
    server = StubServer(("content", "ok"))
    ask(server, api_key_env="SIM_TEST_KEY")
    assert server.requests[0]["auth"] == "Bearer abc123"
    monkeypatch.delenv("SIM_TEST_KEY")
    with pytest.raises(UserSimulatorError, match="SIM_TEST_KEY"):
        ask(StubServer(("content", "ok")), api_key_env="SIM_TEST_KEY")


def test_unreachable_server_is_a_user_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    user = OpenAIUser(
        base_url=f"http://127.0.0.1:{port}/v1", model="sim", max_retries=1, retry_backoff_s=0.01, timeout_s=2
    )
    with pytest.raises(UserSimulatorError, match="after 2 attempts"):
        asyncio.run(user.reply(MESSAGES, episode_id="e"))


def kiwi_task() -> GymTask:
    row = {
        "data_source": "interact_telepathygym",
        "prompt": [{"role": "system", "content": "Guess."}, {"role": "user", "content": "I am thinking of a fruit."}],
        "reward_model": {"style": "rule", "env_name": "TelepathyGym", "title": "Kiwi", "ground_truth": KIWI},
        "extra_info": {
            "tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": "TelepathyGym", "title": "Kiwi"}}}
        },
    }
    return GymTask.from_row(row, source="kiwi")


def test_episodes_talk_to_their_own_url_and_never_see_the_reasoning():
    server = StubServer(("scripted", None))

    async def go():
        async with server.running():
            manager = EnvironmentManager(
                users=OpenAIUser(base_url="http://unused:1/v1", model="mimesis"), shim_url=server.url
            )
            outcomes = {}
            for episode_id in ("ep-1", "ep-2"):
                episode = await manager.start(kiwi_task(), episode_id)
                fuzzy = await episode.step(action_to_tool_call(Action("action", "Is it fuzzy?")))
                guess = await episode.step(action_to_tool_call(Action("answer", "kiwi")))
                outcomes[episode_id] = (episode, fuzzy, guess)
            return manager, outcomes

    manager, outcomes = asyncio.run(go())
    assert [r["episode"] for r in server.requests] == ["ep-1", "ep-2"]
    assert all(
        r["path"] == f"/ep/{r['episode']}/v1/chat/completions" and r["body"]["model"] == "mimesis"
        for r in server.requests
    )
    for episode, fuzzy, guess in outcomes.values():
        assert fuzzy.observation == "Yes." and guess.done and episode.status is Termination.FINISHED
        assert KIWI in episode.privileged[0].reasoning and KIWI not in fuzzy.observation
        assert "<think>" not in fuzzy.observation
    assert manager.active_episode_ids == []


def test_a_failing_simulator_ends_the_episode_as_user_error():
    server = StubServer(("status", 500))

    async def go():
        async with server.running():
            manager = EnvironmentManager(
                users=OpenAIUser(base_url="http://x:1/v1", model="m", max_retries=1, retry_backoff_s=0.01),
                shim_url=server.url,
            )
            episode = await manager.start(kiwi_task(), "e")
            out = await episode.step(action_to_tool_call(Action("action", "Is it fuzzy?")))
            return episode, out

    episode, out = asyncio.run(go())
    assert out.done and episode.status is Termination.USER_ERROR and "HTTP 500" in episode.error


def test_for_episode_binds_a_new_client():
    root = OpenAIUser(base_url="http://h:1/v1/", model="m", temperature=0.5)
    bound = root.for_episode("e", "http://h:1/ep/e/v1")
    assert bound is not root and bound.base_url == "http://h:1/ep/e/v1" and bound.temperature == 0.5
    assert root.for_episode("e", None).base_url == "http://h:1/v1"
    with pytest.raises(ValueError):
        OpenAIUser(base_url="h:1/v1", model="m")
