"""OpenAIChatEpisodeRunner against a scripted OpenAI-compatible chat server on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from aiohttp import web
from eval_episode_fixtures import val_tasks

from mimesis_pl.envs import EnvironmentManager
from mimesis_pl.eval import RetryPolicy
from mimesis_pl.eval.episodes import EpisodeExecutor, OpenAIChatEpisodeRunner, turn_text
from mimesis_pl.eval.trials import RunIdentity, TrialCache
from mimesis_pl.users.scripted import ScriptedUser


def _call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "interact_with_env", "arguments": arguments}}


# The agent's turns for the Cheetah task, by turn index.
CHEETAH_TURNS: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "start broad",
        "tool_calls": [_call("c0", '{"choice": "action", "content": "Is it a fast animal?"}')],
    },
    {"role": "assistant", "content": None, "tool_calls": [_call("c1", "{choice: action")]},  # not JSON
    {"role": "assistant", "content": "I think I know it now."},  # no tool call at all
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call("c3", '{"choice": "answer", "content": "Cheetah"}'),
            _call("c4", '{"choice": "action", "content": "x?"}'),
        ],
    },
]


class ScriptedAgentServer:
    """Answers chat completions from CHEETAH_TURNS (turn = assistant messages so far); HTTP 500 for
    any other task. Records every request body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

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
        if "an animal" not in body["messages"][1]["content"]:
            return web.json_response({"error": {"message": "overloaded", "type": "server_error"}}, status=500)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        message = CHEETAH_TURNS[turn]
        return web.json_response(
            {
                "id": f"r{turn}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            }
        )


def test_chat_agent_episode_and_transport_failures(tmp_path) -> None:
    async def main():
        server = ScriptedAgentServer()
        async with server as base_url:
            manager = EnvironmentManager(users=ScriptedUser(), max_turns=6, no_tool_call="continue")
            runner = OpenAIChatEpisodeRunner(manager, base_url, "served-agent")
            executor = EpisodeExecutor(
                runner,
                RunIdentity("served-agent", "ckpt-7", "scripted"),
                TrialCache(tmp_path / "trials.jsonl"),
                retry=RetryPolicy(2, backoff_s=0),
                transcripts=tmp_path / "episodes.jsonl",
            )
            run = await executor.run(val_tasks("TelepathyGym"))
            episode = await runner.run_episode(val_tasks("TelepathyGym")[0], "direct")
            await runner.aclose()
        return server, run, episode, manager

    server, run, episode, manager = asyncio.run(main())
    records = {r.key.task_id: r for r in run.records}
    assert (records["Cheetah"].status, records["Cheetah"].reward) == ("scored", 1.0)
    assert (records["Sputnik 1"].status, records["Sputnik 1"].failure, records["Sputnik 1"].attempts) == (
        "unscored",
        "agent_transport",
        2,
    )
    assert not manager.active_episode_ids  # the aborted episodes were released

    assert episode.status == "finished" and list(episode.turn_rewards) == [0.0, 0.0, 0.0, 1.0]
    assert [s.tool_error for s in episode.steps] == [None, "malformed", "missing", None]
    assert episode.steps[0].action == {"choice": "action", "content": "Is it a fast animal?"}
    assert episode.steps[3].action == {"choice": "answer", "content": "Cheetah"}  # the first call only
    assert episode.counters["tool_calls_ignored"] == 1

    bodies = [b for b in server.bodies if "an animal" in b["messages"][1]["content"]][-4:]
    tools = bodies[0]["tools"]
    assert [t["function"]["name"] for t in tools] == ["interact_with_env"]
    assert tools[0]["function"]["parameters"]["properties"]["choice"]["enum"] == ["action", "answer"]
    assert bodies[0]["temperature"] == 0.0 and bodies[0]["tool_choice"] == "auto"
    # the executed call and its observation come back as the agent's next input
    assistant, tool = bodies[1]["messages"][2:4]
    assert [c["id"] for c in assistant["tool_calls"]] == ["c0"]
    assert tool == {"role": "tool", "tool_call_id": "c0", "content": episode.steps[0].observation}
    assert episode.steps[0].observation.startswith(("Yes", "No", "Maybe"))
    # a turn without a structured call gets its observation as a user message
    assert bodies[3]["messages"][-1] == {"role": "user", "content": episode.steps[2].observation}
    assert "No tool call" in episode.steps[2].observation and "could not be parsed" in episode.steps[1].observation


def test_turn_text_writes_calls_in_the_package_format() -> None:
    text = turn_text({"content": "ok", "tool_calls": [_call("a", '{"choice": "answer", "content": "7"}')]})
    assert text == (
        'ok\n<tool_call>\n{"name": "interact_with_env", "arguments": {"choice": "answer", "content": "7"}}'
        "\n</tool_call>"
    )
    dict_args = turn_text({"tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]})
    assert json.loads(dict_args.split("\n")[1]) == {"name": "f", "arguments": {"x": 1}}
