"""TauGym's tool runtimes, behind the tau-USI runtime's HTTP shape (:mod:`mimesis_pl.envs.gyms.tau.tool_runtime`).

Routes and bodies are those of :class:`~mimesis_pl.envs.gyms.tau.tool_runtime.HttpToolRuntime`
(``POST /reset {env_name, task_index}``, ``/step {session_id, action: {name, kwargs}}``,
``/reward {session_id, agent_texts}``, ``/close {session_id}``), plus an optional ``task_split``
(``test``/``train``) in ``/reset``, and ``/reset`` answers also ``instruction`` (the user's task, for the
user simulator) and ``tool_specs`` (the tools' JSON schemas). Two runtimes serve them:

- :class:`RetailRuntime` — our own small retail environment (:mod:`.retail`), for offline runs;
- :class:`TauBenchRuntime` — a proxy to the user's tau-bench installation (``pip install
  git+https://github.com/sierra-research/tau-bench``): the real retail/airline databases, tools and
  tasks; tau-bench's own LLM user is never called (the episode's user simulator plays the instruction).

``python -m mimesis_pl.envs.gyms.tau --kind tau_bench --port 8300`` serves one.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from aiohttp import web

import mimesis_pl.envs.gyms.tau.retail as retail
from mimesis_pl.envs.gyms.tau.tool_runtime import HttpToolRuntime, make_runtime_app, serve_tool_runtime
from mimesis_pl.failures import EnvironmentFailure


class TauRuntime(Protocol):
    async def reset(self, env_name: str, task_index: int, task_split: str = "test") -> dict[str, Any]: ...

    async def step(self, session_id: str, name: str, kwargs: Mapping[str, Any]) -> str: ...

    async def reward(self, session_id: str, agent_texts: Sequence[str]) -> float: ...

    async def close(self, session_id: str) -> None: ...

    async def aclose(self) -> None: ...


class TauHttpRuntime(HttpToolRuntime):
    """The tau-USI HTTP client, sending the task split along with ``/reset``."""

    async def reset(self, env_name: str, task_index: int, task_split: str = "test") -> dict[str, Any]:
        body = {"env_name": env_name, "task_index": task_index, "task_split": task_split}
        payload = await self._clients["reset"].call(body, what="tool runtime /reset")
        if not isinstance(payload.get("session_id"), str):
            raise EnvironmentFailure(f"runtime /reset answered without a session_id: {str(payload)[:200]}")
        return payload


class _Sessions:
    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, Any]] = {}

    def open(self, **state: Any) -> str:
        session = uuid.uuid4().hex
        self._sessions[session] = state
        return session

    def get(self, session_id: str) -> dict[str, Any]:
        if session_id not in self._sessions:
            raise EnvironmentFailure(f"unknown runtime session {session_id!r}")
        return self._sessions[session_id]

    async def close(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    async def aclose(self) -> None:
        self._sessions.clear()


class RetailRuntime(_Sessions):
    """Our own retail environment (:mod:`.retail`); task ``i`` is ``RETAIL_TASKS[i]`` whatever the split."""

    WIKI = (
        "You are a retail customer service agent. Authenticate the user (email, or name and zip code) before "
        "anything else, look records up before acting, ask for an explicit yes before any change, and never "
        "make up ids, prices or policies."
    )

    async def reset(self, env_name: str, task_index: int, task_split: str = "test") -> dict[str, Any]:
        if env_name != "retail" or not 0 <= task_index < len(retail.RETAIL_TASKS):
            raise EnvironmentFailure(
                f"the offline retail runtime has tasks retail 0..{len(retail.RETAIL_TASKS) - 1}, "
                f"not {env_name} {task_index}"
            )
        task = retail.RETAIL_TASKS[task_index]
        session = self.open(task=task, db=copy.deepcopy(retail.RETAIL_DB))
        return {
            "session_id": session,
            "wiki": self.WIKI,
            "tools": sorted(retail.TOOLS),
            "tool_specs": retail.tool_specs(),
            "instruction": task["instruction"],
        }

    async def step(self, session_id: str, name: str, kwargs: Mapping[str, Any]) -> str:
        return retail.run_tool(self.get(session_id)["db"], name, kwargs)

    async def reward(self, session_id: str, agent_texts: Sequence[str]) -> float:
        state = self.get(session_id)
        return retail.retail_reward(state["db"], state["task"], agent_texts)


class TauBenchRuntime(_Sessions):
    """A proxy to an installed tau-bench: its databases, tools and tasks, and its reward rule.

    tau-bench's environment is built with the ``human`` user strategy and never reset, so its LLM user is
    never called; the task is set directly and the database loaded fresh per session. The reward
    replays the task's reference actions on a fresh database and compares the data (tau-bench's
    hash rule), then checks the required outputs against the agent's messages.
    """

    def __init__(self) -> None:
        super().__init__()
        try:
            from tau_bench.envs import get_env
        except ImportError:
            raise ImportError(
                "TauBenchRuntime needs tau-bench: pip install git+https://github.com/sierra-research/tau-bench"
            ) from None
        self._get_env = get_env

    def _env(self, env_name: str, task_index: int, task_split: str) -> Any:
        env = self._get_env(
            env_name, user_strategy="human", user_model="none", task_split=task_split, task_index=task_index
        )
        if not 0 <= task_index < len(env.tasks):
            raise EnvironmentFailure(f"tau-bench {env_name}/{task_split} has no task {task_index}")
        env.task_index, env.task = task_index, env.tasks[task_index]
        env.data = env.data_load_func()
        return env

    async def reset(self, env_name: str, task_index: int, task_split: str = "test") -> dict[str, Any]:
        env = self._env(env_name, task_index, task_split)
        session = self.open(env=env, key=(env_name, task_index, task_split))
        specs = list(env.tools_info)
        return {
            "session_id": session,
            "wiki": env.wiki,
            "tools": [s["function"]["name"] for s in specs],
            "tool_specs": specs,
            "instruction": env.task.instruction,
        }

    async def step(self, session_id: str, name: str, kwargs: Mapping[str, Any]) -> str:
        env = self.get(session_id)["env"]
        tool = env.tools_map.get(name)
        if tool is None:
            return f"Error: unknown tool {name}"
        try:
            return str(tool.invoke(data=env.data, **dict(kwargs)))
        except Exception as err:  # tau-bench's tools report misuse by raising; the agent sees it, as in tau-bench
            return f"Error: {err}"

    async def reward(self, session_id: str, agent_texts: Sequence[str]) -> float:
        state = self.get(session_id)
        env = state["env"]
        truth = self._env(*state["key"])
        for action in env.task.actions:
            tool = truth.tools_map.get(action.name)
            if tool is not None:
                try:
                    tool.invoke(data=truth.data, **dict(action.kwargs))
                except Exception:  # a reference action that fails leaves the data as tau-bench's replay does
                    pass
        same = json.dumps(env.data, sort_keys=True, default=str) == json.dumps(truth.data, sort_keys=True, default=str)
        return float(same and retail.said_outputs(list(env.task.outputs or []), agent_texts))


def make_tau_app(runtime: TauRuntime) -> web.Application:
    """The runtime's HTTP routes (see the module docstring): the tau-USI runtime's server, ``task_split`` passed on."""
    return make_runtime_app(runtime)


async def serve_runtime(runtime: TauRuntime, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Serve ``runtime`` (``port=0``: a free port); returns ``(runner, base_url)``."""
    return await serve_tool_runtime(runtime, host, port)
