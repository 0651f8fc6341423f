"""Helpers for the CSD coach tests: hand-built conversations, expert episodes, a scripted coach server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from aiohttp import web

from mimesis_pl.envs import (
    Action,
    EnvironmentManager,
    GymTask,
    PrivilegedTurn,
    read_gym_tasks,
    run_expert_episode,
)
from mimesis_pl.envs.assets import bundled_gym_file
from mimesis_pl.envs.gyms.intention import IntentionExpert, load_details, preferred_option
from mimesis_pl.envs.gyms.persuade import PersuadeExpert
from mimesis_pl.envs.gyms.telepathy import TelepathyExpert
from mimesis_pl.envs.gyms.turtle import TurtleExpert
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.rollout.trajectory import Trajectory
from mimesis_pl.users.scripted import ScriptedUser

GYM_DATA = Path(__file__).resolve().parents[2] / "assets" / "data" / "gyms"
USER_GYMS = ("TelepathyGym", "TurtleGym", "IntentionGym", "PersuadeGym")


def turn(choice: str, content: str, thought: str = "thinking") -> str:
    """An assistant turn as the policy writes it."""
    return f"<think>{thought}</think>\n" + action_to_tool_call(Action(choice, content))


def make_trajectory(
    steps: Sequence[tuple[str, str | None]],
    privileged: Sequence[Any],
    *,
    episode_id: str = "ep-1",
    status: str = "finished",
    opening: str = "I am thinking of a fruit.",
    prompt: Sequence[dict[str, Any]] | None = None,
) -> Trajectory:
    """A trajectory whose public conversation is ``steps`` = [(assistant text, tool message or None)].

    A ``None`` tool message ends the conversation there (the loop appends none after the last turn).
    Token fields are empty: coaching reads only messages and the privileged record.
    """
    messages: list[dict[str, Any]] = (
        list(prompt)
        if prompt is not None
        else [
            {"role": "system", "content": "Guess the entity."},
            {"role": "user", "content": opening},
        ]
    )
    for text, observation in steps:
        messages.append({"role": "assistant", "content": text})
        if observation is not None:
            messages.append({"role": "tool", "content": observation})
    return Trajectory(
        input_ids=[],
        response_mask=[],
        prompt_length=0,
        turn_spans=[],
        turn_rewards=[0.0] * len(steps),
        group_id="g",
        gen_uid="g-0",
        episode_id=episode_id,
        status=status,
        messages=messages,
        privileged=list(privileged),
    )


def entry(index: int, public: str, reasoning: str = "") -> dict[str, Any]:
    """A shim entry as ``ShimClient.privileged`` returns it."""
    return {
        "index": index,
        "reasoning": reasoning,
        "public": public,
        "finish_reason": "stop",
        "created": 0.0,
        "truncated": False,
    }


# ------------------------------------------------------------------------------- expert episodes
@cache
def gym_tasks(env_name: str) -> tuple[GymTask, ...]:
    return tuple(read_gym_tasks(GYM_DATA / "train" / f"{env_name}.parquet")) + tuple(
        read_gym_tasks(GYM_DATA / "val" / f"{env_name}.parquet")
    )


def expert_for(task: GymTask):
    if task.env_name == "TelepathyGym":
        return TelepathyExpert.from_tasks(gym_tasks("TelepathyGym"))
    if task.env_name == "TurtleGym":
        return TurtleExpert.from_tasks(gym_tasks("TurtleGym"))
    if task.env_name == "IntentionGym":
        return IntentionExpert.for_task(task)
    return PersuadeExpert()


def secret_fields(task: GymTask) -> dict[str, Any]:
    """The task's hidden fields plus what a gym keeps outside them (Intention's wishes and aspects)."""
    hidden = dict(task.hidden)
    if task.env_name == "IntentionGym":
        details = load_details([bundled_gym_file("intention_details.json")])[task.hidden["id"]]
        hidden["wishes"] = [preferred_option(task.hidden["id"], i, d.options) for i, d in enumerate(details)]
        hidden["aspects"] = [d.description for d in details]
    return hidden


@dataclass
class Played:
    task: GymTask
    trajectory: Trajectory
    privileged: list[PrivilegedTurn]


async def play_expert(task: GymTask, episode_id: str) -> Played:
    """An expert episode against the in-process scripted user, as a trajectory (no tokens)."""
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=16)
    trace = await run_expert_episode(manager, task, expert_for(task), episode_id=episode_id)
    steps = [(t.move.assistant_text(), t.observation) for t in trace.turns]
    steps[-1] = (steps[-1][0], None)  # the loop appends no tool message after the final turn
    traj = make_trajectory(steps, trace.privileged, episode_id=episode_id, prompt=task.public_messages())
    return Played(task, traj, trace.privileged)


@cache
def expert_episodes(per_gym: int = 2) -> tuple[Played, ...]:
    async def go():
        out = []
        for env_name in USER_GYMS:
            for j, task in enumerate(gym_tasks(env_name)[:per_gym]):
                out.append(await play_expert(task, f"{env_name}-{j}"))
        return out

    return tuple(asyncio.run(go()))


# ------------------------------------------------------------------------------- scripted coach server
class CoachServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that answers from a script.

    Each script item is one answer, used in order (the last one repeats): ``{"content": str}``,
    ``{"status": int}`` (an OpenAI-style error), ``{"raw": str}`` (a 200 with that body) or
    ``{"delay": s, ...}``. ``requests`` keeps every body with its Authorization header.
    """

    def __init__(self, script: Sequence[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"body": body, "auth": request.headers.get("Authorization"), "path": request.path})
        item = self.script[min(len(self.requests) - 1, len(self.script) - 1)]
        if "delay" in item:
            await asyncio.sleep(item["delay"])
        if "status" in item:
            return web.json_response(
                {"error": {"message": "scripted failure", "type": "server_error"}}, status=item["status"]
            )
        if "raw" in item:
            return web.Response(text=item["raw"], content_type="text/html")
        message = {"role": "assistant", "content": item.get("content")}
        return web.json_response(
            {
                "id": "c",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # aiohttp exposes the bound socket only here
        self.url = f"http://127.0.0.1:{port}/v1"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def last_user_prompt(self) -> str:
        return self.requests[-1]["body"]["messages"][-1]["content"]


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
