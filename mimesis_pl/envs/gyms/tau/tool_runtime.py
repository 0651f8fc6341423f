"""The tool runtime of tau-USI rollouts: a small Protocol, its HTTP client, and our scripted runtime.

Rollouts talk to a tau-bench-compatible runtime service over HTTP (``POST /reset``, ``/step``,
``/reward``, ``/close``; JSON in and out, described on :class:`HttpToolRuntime`). Offline, the scripted
runtime — two tiny databases (retail orders, airline reservations) with tau-bench's reward rule — is
served on loopback behind the same routes, so the tiny config exercises the HTTP path too.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from aiohttp import web

from mimesis_pl.failures import EnvironmentFailure
from mimesis_pl.llm import ChatCompletionsClient, Endpoint


class ToolRuntime(Protocol):
    async def reset(self, env_name: str, task_index: int) -> dict[str, Any]:
        """Start a session: ``{"session_id": str, "wiki": str, "tools": [str]}``."""
        ...

    async def step(self, session_id: str, name: str, kwargs: Mapping[str, Any]) -> str:
        """Run one tool call; the observation text (tool errors are observations, not failures)."""
        ...

    async def reward(self, session_id: str, agent_texts: Sequence[str]) -> float:
        """tau-bench's reward: 1 when the database equals the ground truth's and every required output
        was said, else 0."""
        ...

    async def close(self, session_id: str) -> None: ...

    async def aclose(self) -> None: ...


class HttpToolRuntime:
    """A :class:`ToolRuntime` over HTTP at ``base_url``. Bodies: ``/reset {env_name, task_index}`` →
    ``{session_id, wiki, tools}``; ``/step {session_id, action: {name, kwargs}}`` → ``{observation}``;
    ``/reward {session_id, agent_texts}`` → ``{reward}``; ``/close {session_id}``. Transport failures are
    :class:`EnvironmentFailure` (the item is retried, then unscored)."""

    def __init__(self, base_url: str, timeout_s: float = 60.0, max_retries: int = 2) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"runtime url must be http(s), got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        endpoint = Endpoint(self.base_url, timeout_s=timeout_s, max_retries=max_retries)
        self._clients = {
            route: ChatCompletionsClient(endpoint, EnvironmentFailure, path=f"/{route}")
            for route in ("reset", "step", "reward", "close")
        }

    async def _call(self, route: str, body: dict[str, Any], field: str) -> Any:
        def read(payload: dict[str, Any]) -> Any:
            if field not in payload:
                raise EnvironmentFailure(f"runtime /{route} answered without '{field}': {str(payload)[:200]}")
            return payload[field]

        return await self._clients[route].call(body, read, what=f"tool runtime /{route}")

    async def reset(self, env_name: str, task_index: int) -> dict[str, Any]:
        payload = await self._clients["reset"].call(
            {"env_name": env_name, "task_index": task_index}, what="tool runtime /reset"
        )
        if not isinstance(payload.get("session_id"), str):
            raise EnvironmentFailure(f"runtime /reset answered without a session_id: {str(payload)[:200]}")
        return payload

    async def step(self, session_id: str, name: str, kwargs: Mapping[str, Any]) -> str:
        return str(
            await self._call(
                "step", {"session_id": session_id, "action": {"name": name, "kwargs": dict(kwargs)}}, "observation"
            )
        )

    async def reward(self, session_id: str, agent_texts: Sequence[str]) -> float:
        return float(await self._call("reward", {"session_id": session_id, "agent_texts": list(agent_texts)}, "reward"))

    async def close(self, session_id: str) -> None:
        await self._clients["close"].call({"session_id": session_id}, what="tool runtime /close")

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()


# ---------------------------------------------------------------------------------------------- scripted

_DATABASES: dict[str, dict[str, dict[str, Any]]] = {
    "retail": {
        "#W1001": {"user": "ana_lima", "status": "pending", "items": ["desk lamp"]},
        "#W1002": {"user": "ana_lima", "status": "delivered", "items": ["desk chair", "mouse pad"]},
        "#W1003": {"user": "raj_iyer", "status": "pending", "items": ["kettle"]},
    },
    "airline": {
        "ABC123": {"user": "sam_park", "status": "booked", "flight": "HAT001"},
        "XYZ789": {"user": "mia_chen", "status": "booked", "flight": "HAT042"},
    },
}
_WIKI = (
    "You are a customer service agent. Look records up before acting, ask the user to confirm (yes) "
    "before any change, and never invent ids."
)
# tau-bench task rows of the scripted domains: ground-truth actions and required outputs.
SCRIPTED_TASKS: dict[tuple[str, int], dict[str, Any]] = {
    ("retail", 0): {"actions": [{"name": "cancel_order", "kwargs": {"order_id": "#W1001"}}], "outputs": []},
    ("retail", 1): {
        "actions": [{"name": "return_order_items", "kwargs": {"order_id": "#W1002", "item": "desk chair"}}],
        "outputs": [],
    },
    ("retail", 2): {"actions": [], "outputs": []},  # cancelling a delivered order must not change anything
    ("retail", 3): {"actions": [{"name": "cancel_order", "kwargs": {"order_id": "#W1003"}}], "outputs": []},
    ("airline", 0): {
        "actions": [{"name": "cancel_reservation", "kwargs": {"reservation_id": "ABC123"}}],
        "outputs": [],
    },
    ("airline", 1): {"actions": [], "outputs": ["HAT042"]},
}


def apply_tool(db: dict[str, dict[str, Any]], name: str, kwargs: Mapping[str, Any]) -> str:
    """Run one tool on ``db`` (mutated); errors come back as observation text, as in tau-bench."""
    key = str(kwargs.get("order_id") or kwargs.get("reservation_id") or "")
    record = db.get(key)
    if name in ("get_order_details", "get_reservation_details"):
        return json.dumps(record) if record else f"Error: {key or 'id'} not found"
    if name == "transfer_to_human_agents":
        return "Transfer successful"
    if record is None:
        return f"Error: {key or 'id'} not found"
    if name in ("cancel_order", "cancel_reservation"):
        if record["status"] not in ("pending", "booked"):
            return f"Error: {key} is {record['status']} and cannot be cancelled"
        record["status"] = "cancelled"
        return f"{key} cancelled"
    if name == "return_order_items":
        if record["status"] != "delivered" or kwargs.get("item") not in record.get("items", []):
            return f"Error: cannot return {kwargs.get('item')!r} from {key}"
        record["status"] = "return requested"
        return f"return of {kwargs.get('item')} from {key} requested"
    return f"Error: unknown tool {name!r}"


class ScriptedToolRuntime:
    """In-process runtime over the tiny databases (also served by :func:`make_runtime_app`)."""

    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, Any]] = {}

    async def reset(self, env_name: str, task_index: int, task_split: str = "test") -> dict[str, Any]:
        # one split: TauGym's ``task_split`` is accepted and names nothing here
        if (env_name, task_index) not in SCRIPTED_TASKS:
            raise EnvironmentFailure(f"scripted runtime has no task {env_name}_{task_index}")
        session = uuid.uuid4().hex
        self._sessions[session] = {"task": (env_name, task_index), "db": copy.deepcopy(_DATABASES[env_name])}
        tools = sorted(
            {"get_order_details", "cancel_order", "return_order_items"}
            if env_name == "retail"
            else {"get_reservation_details", "cancel_reservation"}
        ) + ["transfer_to_human_agents"]
        return {"session_id": session, "wiki": _WIKI, "tools": tools}

    def _session(self, session_id: str) -> dict[str, Any]:
        if session_id not in self._sessions:
            raise EnvironmentFailure(f"unknown runtime session {session_id!r}")
        return self._sessions[session_id]

    async def step(self, session_id: str, name: str, kwargs: Mapping[str, Any]) -> str:
        return apply_tool(self._session(session_id)["db"], name, kwargs)

    async def reward(self, session_id: str, agent_texts: Sequence[str]) -> float:
        session = self._session(session_id)
        env_name, _ = session["task"]
        truth = copy.deepcopy(_DATABASES[env_name])
        task = SCRIPTED_TASKS[session["task"]]
        for action in task["actions"]:
            apply_tool(truth, action["name"], action["kwargs"])
        said = " ".join(agent_texts)
        return float(truth == session["db"] and all(out in said for out in task["outputs"]))

    async def close(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    async def aclose(self) -> None:
        self._sessions.clear()


def make_runtime_app(runtime: Any) -> web.Application:
    """The HTTP routes of :class:`HttpToolRuntime` over an in-process runtime (the scripted one here, TauGym's).

    A ``task_split`` in the reset body is passed on (TauGym's runtimes take it; the scripted one has none).
    """

    async def handle(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            route = request.match_info["route"]
            if route == "reset":
                split = {"task_split": str(body["task_split"])} if body.get("task_split") else {}
                return web.json_response(await runtime.reset(str(body["env_name"]), int(body["task_index"]), **split))
            if route == "step":
                action = body["action"]
                observation = await runtime.step(body["session_id"], action["name"], action.get("kwargs") or {})
                return web.json_response({"observation": observation})
            if route == "reward":
                return web.json_response({"reward": await runtime.reward(body["session_id"], body["agent_texts"])})
            if route == "close":
                await runtime.close(body["session_id"])
                return web.json_response({"ok": True})
        except (KeyError, TypeError, ValueError, EnvironmentFailure) as err:
            return web.json_response({"error": f"{type(err).__name__}: {err}"}, status=400)
        return web.json_response({"error": f"unknown route {route!r}"}, status=404)

    app = web.Application()
    app.router.add_post("/{route}", handle)
    return app


async def serve_tool_runtime(runtime: Any, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Serve ``runtime``'s routes (``port=0``: a free port); returns ``(runner, base_url)``."""
    runner = web.AppRunner(make_runtime_app(runtime))
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # the port the OS picked
    return runner, f"http://{host}:{bound}"


async def serve_scripted_runtime(host: str = "127.0.0.1") -> tuple[web.AppRunner, str]:
    """Serve a fresh scripted runtime on a free loopback port; returns ``(runner, base_url)``."""
    return await serve_tool_runtime(ScriptedToolRuntime(), host)
