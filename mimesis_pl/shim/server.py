"""The privileged-channel shim: an aiohttp server in front of an OpenAI-compatible upstream.

Routes (``{episode}`` is an id accepted by :func:`~mimesis_pl.shim.store.check_episode_id`):

====================================================  ==============================================
``POST /ep/{episode}/v1/chat/completions``            forward, return only the public text, store the
                                                      reasoning as entry *i* (the episode's i-th reply)
``POST /v1/chat/completions``                         the same without storing (judges, coaches)
``GET /ep/{episode}/privileged``                      ``{"episode", "known", "count", "entries"}``
``DELETE /ep/{episode}``                              ``{"episode", "dropped", "count"}``
``GET /stats``, ``GET /health``                       counters and evictions; liveness
====================================================  ==============================================

The ``/v1`` segment may be left out of both completion routes. When a bearer token is configured it
guards every route: an open completion route would let anyone who reaches the port append entries to
any episode and use the upstream. An OpenAI client sends it as its API key.

``stream: true`` is refused with HTTP 400: the reply must be complete before ``<think>`` can be split
from the public text, and a streamed prefix could already carry reasoning. ``n > 1`` is refused on
episode routes, where entry *i* must be exactly one reply.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from aiohttp import web

from mimesis_pl.chat.think import request_prefills_think
from mimesis_pl.shim.reply import split_completion, with_own_reasoning
from mimesis_pl.shim.store import PrivilegedStore, check_episode_id
from mimesis_pl.shim.upstream import UpstreamClient, UpstreamError

ENTRY_INDEX_HEADER = "X-Shim-Entry-Index"
log = logging.getLogger(__name__)


@dataclass
class ShimCounters:
    """Request outcomes since start (reported under ``requests`` on ``GET /stats``)."""

    scoped: int = 0
    unscoped: int = 0
    ok: int = 0
    upstream_errors: int = 0
    invalid_requests: int = 0
    unauthorized: int = 0
    empty_public: int = 0
    with_reasoning: int = 0


@dataclass
class ShimState:
    token: str | None
    model_override: str | None
    counters: ShimCounters
    started_at: float
    reasoning_prefilled: bool | None = None
    restore_reasoning: bool = True

    def prefilled(self, body: dict[str, Any]) -> bool:
        """Whether this request's reply starts inside ``<think>``: the shim's setting, else the request's
        thinking switch (``chat_template_kwargs.enable_thinking``; docs/decisions.md A75)."""
        if self.reasoning_prefilled is not None:
            return self.reasoning_prefilled
        return request_prefills_think(body)


STORE_KEY = web.AppKey("store", PrivilegedStore)
UPSTREAM_KEY = web.AppKey("upstream", UpstreamClient)
STATE_KEY = web.AppKey("state", ShimState)
# Request handler tasks still running, so that stopping can bound how long they may take.
IN_FLIGHT_KEY = web.AppKey("in_flight", set)


def error_response(status: int, message: str, kind: str, **extra: Any) -> web.Response:
    """An OpenAI-style error body, so OpenAI clients raise with ``message`` in the exception."""
    return web.json_response({"error": {"message": message, "type": kind, **extra}}, status=status)


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    # aiohttp's own 404/405/413 are plain text; clients of this server expect OpenAI-style JSON.
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_response(exc.status, f"{request.method} {request.path}: {exc.reason}", "invalid_request_error")


@web.middleware
async def track_in_flight(request: web.Request, handler: Any) -> web.StreamResponse:
    tasks = request.app[IN_FLIGHT_KEY]
    task = asyncio.current_task()
    tasks.add(task)
    try:
        return await handler(request)
    finally:
        tasks.discard(task)


@web.middleware
async def _require_token(request: web.Request, handler: Any) -> web.StreamResponse:
    if not _authorised(request):
        return _refuse_unauthorised(request)
    return await handler(request)


def create_app(
    upstream: UpstreamClient,
    store: PrivilegedStore,
    *,
    token: str | None = None,
    model_override: str | None = None,
    max_request_bytes: int = 32 * 1024 * 1024,
    reasoning_prefilled: bool | None = None,
    restore_reasoning: bool = True,
) -> web.Application:
    """Build the aiohttp application; the upstream session opens and closes with the app.

    Args:
        upstream: client of the OpenAI-compatible server the shim fronts.
        store: where episode entries live (bounded; see :class:`~mimesis_pl.shim.store.StoreLimits`).
        token: when set, ``Authorization: Bearer <token>`` is required on every route.
        model_override: replaces ``model`` in every forwarded request (a served model has one name).
        max_request_bytes: largest accepted request body (long conversations exceed aiohttp's 1 MiB).
        reasoning_prefilled: replies start inside ``<think>`` (``True``), never (``False``), or as each
            request's ``chat_template_kwargs.enable_thinking`` says (``None``).
        restore_reasoning: on an episode route whose request pre-fills ``<think>``, give the simulator's earlier
            turns back their stored reasoning (``reasoning_content``) before forwarding (A78).
    """
    app = web.Application(
        client_max_size=max_request_bytes, middlewares=[track_in_flight, _json_errors, _require_token]
    )
    app[IN_FLIGHT_KEY] = set()
    app[STORE_KEY] = store
    app[UPSTREAM_KEY] = upstream
    app[STATE_KEY] = ShimState(
        token or None,
        model_override or None,
        ShimCounters(),
        time.time(),
        reasoning_prefilled=reasoning_prefilled,
        restore_reasoning=restore_reasoning,
    )

    async def upstream_session(app: web.Application):
        await upstream.start()
        yield
        await upstream.close()

    app.cleanup_ctx.append(upstream_session)
    app.router.add_post("/ep/{episode}/v1/chat/completions", _scoped_completion)
    app.router.add_post("/ep/{episode}/chat/completions", _scoped_completion)
    app.router.add_post("/v1/chat/completions", _unscoped_completion)
    app.router.add_post("/chat/completions", _unscoped_completion)
    app.router.add_get("/ep/{episode}/privileged", _privileged)
    app.router.add_delete("/ep/{episode}", _drop)
    app.router.add_get("/stats", _stats)
    app.router.add_get("/health", _health)
    return app


async def _scoped_completion(request: web.Request) -> web.Response:
    return await _complete(request, request.match_info["episode"])


async def _unscoped_completion(request: web.Request) -> web.Response:
    return await _complete(request, None)


async def _complete(request: web.Request, episode: str | None) -> web.Response:
    state = request.app[STATE_KEY]
    counters = state.counters
    if episode is None:
        counters.unscoped += 1
    else:
        counters.scoped += 1
    body, problem = await _request_body(request, episode)
    if problem is not None:
        counters.invalid_requests += 1
        return error_response(400, problem, "invalid_request_error")
    if state.model_override:
        body["model"] = state.model_override
    prefilled = state.prefilled(body)
    if episode is not None and prefilled and state.restore_reasoning:
        # the simulator's earlier turns as it wrote them (its own reasoning back, A78); never sent to the agent
        body["messages"] = with_own_reasoning(body["messages"], request.app[STORE_KEY].get(episode) or [])
    try:
        reply = await request.app[UPSTREAM_KEY].chat_completions(body)
        public_reply, choices = split_completion(reply, prefilled=prefilled)
    except UpstreamError as exc:
        counters.upstream_errors += 1
        if exc.diagnostic:
            log.warning(
                "%s %s: %s; upstream said (reasoning removed): %s",
                request.method,
                request.path,
                exc.message,
                exc.diagnostic,
            )
        return error_response(exc.status, exc.message, "upstream_error", upstream_status=exc.upstream_status)
    except ValueError as exc:
        counters.upstream_errors += 1
        return error_response(502, f"upstream reply unusable: {exc}", "upstream_error", upstream_status=200)
    counters.ok += 1
    counters.empty_public += sum(1 for c in choices if not c.public)
    counters.with_reasoning += sum(1 for c in choices if c.reasoning)
    headers = {}
    if episode is not None:
        # Stored before the reply is sent, so a privileged read that follows the reply always sees it.
        first = choices[0]
        entry = request.app[STORE_KEY].append(
            episode, reasoning=first.reasoning, public=first.public, finish_reason=first.finish_reason
        )
        headers[ENTRY_INDEX_HEADER] = str(entry["index"])
    return web.json_response(public_reply, headers=headers)


async def _request_body(request: web.Request, episode: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse and vet a completion request; the second item is the reason it is refused, if any."""
    if episode is not None:
        try:
            check_episode_id(episode)
        except ValueError as exc:
            return {}, str(exc)
    try:
        body = json.loads(await request.read())
    except ValueError as exc:
        return {}, f"request body is not valid JSON: {exc}"
    if not isinstance(body, dict):
        return {}, f"request body must be a JSON object, got {type(body).__name__}"
    if not isinstance(body.get("messages"), list):
        return {}, "request body needs a 'messages' list"
    if body.get("stream"):
        return {}, (
            "stream=true is not supported by the privileged shim: the whole reply is needed to split "
            "<think> reasoning from the public text; send the request with stream=false"
        )
    if episode is not None and body.get("n") not in (None, 1):
        return {}, (
            f"n={body.get('n')!r} is not allowed on episode route /ep/{episode}/…: each call must be "
            "exactly one user reply so that privileged entry i stays the i-th reply; use n=1"
        )
    return body, None


def _authorised(request: web.Request) -> bool:
    token = request.app[STATE_KEY].token
    if token is None:
        return True
    given = request.headers.get("Authorization", "")
    scheme, _, value = given.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


def _refuse_unauthorised(request: web.Request) -> web.Response:
    request.app[STATE_KEY].counters.unauthorized += 1
    return error_response(
        401,
        f"{request.method} {request.path} needs header 'Authorization: Bearer <shim token>' (missing or wrong token)",
        "authentication_error",
    )


def _episode_or_error(request: web.Request) -> tuple[str, web.Response | None]:
    episode = request.match_info["episode"]
    try:
        return check_episode_id(episode), None
    except ValueError as exc:
        return episode, error_response(400, str(exc), "invalid_request_error")


async def _privileged(request: web.Request) -> web.Response:
    episode, problem = _episode_or_error(request)
    if problem is not None:
        return problem
    entries = request.app[STORE_KEY].get(episode)
    # "known": false tells an unseen, dropped or evicted episode apart from one with no replies yet.
    return web.json_response(
        {"episode": episode, "known": entries is not None, "count": len(entries or []), "entries": entries or []}
    )


async def _drop(request: web.Request) -> web.Response:
    episode, problem = _episode_or_error(request)
    if problem is not None:
        return problem
    count = request.app[STORE_KEY].drop(episode)
    return web.json_response({"episode": episode, "dropped": count is not None, "count": count or 0})


async def _stats(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return web.json_response(
        {
            "upstream": request.app[UPSTREAM_KEY].url,
            "model_override": state.model_override,
            "token_required": state.token is not None,
            "uptime_s": round(time.time() - state.started_at, 3),
            "requests": asdict(state.counters),
            "store": request.app[STORE_KEY].stats(),
        }
    )


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})
