"""The aiohttp application of ``mimesis-pl serve``: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health``.

Every error is OpenAI-style JSON ``{"error": {"message", "type", "param"}}`` (aiohttp's own 404/405/413
included), so OpenAI clients raise with the message. With a token, every route needs
``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from typing import Any

from aiohttp import web

from ..llm.endpoint import api_key
from ..shim.server import IN_FLIGHT_KEY, track_in_flight
from .generation import ServedModel
from .requests import BadRequest, parse_request
from .settings import ServeSettings

log = logging.getLogger(__name__)

MODEL_KEY = web.AppKey("served_model", ServedModel)
TOKEN_KEY = web.AppKey("token", str)


def error_response(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    """An OpenAI-style error body (``code`` is the HTTP status, as vLLM sends it)."""
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": param, "code": status}}, status=status
    )


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadRequest as err:
        return error_response(err.status, err.message, err.kind, err.param)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_response(exc.status, f"{request.method} {request.path}: {exc.reason}", "BadRequestError")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a generation failure answers 500 and the server keeps serving
        log.exception("mimesis-pl serve: %s %s failed", request.method, request.path)
        return error_response(500, f"{type(exc).__name__}: {exc}", "InternalServerError")


@web.middleware
async def _require_token(request: web.Request, handler: Any) -> web.StreamResponse:
    token = request.app[TOKEN_KEY]
    if token:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            return error_response(
                401,
                f"{request.method} {request.path} needs header 'Authorization: Bearer <token>' "
                "(missing or wrong token)",
                "AuthenticationError",
            )
    return await handler(request)


def create_app(
    settings: ServeSettings, *, served: ServedModel | None = None, max_request_bytes: int = 32 << 20
) -> web.Application:
    """The application serving ``settings.model_dir``.

    ``served`` is a model already loaded for ``settings`` (the caller keeps owning it); without it the
    export is loaded here and its engine is closed when the application is cleaned up. The bearer token
    is read from ``settings.token_env`` (an unset variable is an error, never an open server).
    """
    token = api_key(settings.token_env, where="ServeSettings.token_env")
    owned = served is None
    served = served if served is not None else ServedModel(settings)
    app = web.Application(
        client_max_size=max_request_bytes, middlewares=[track_in_flight, _json_errors, _require_token]
    )
    app[MODEL_KEY] = served
    app[TOKEN_KEY] = token or ""
    app[IN_FLIGHT_KEY] = set()
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/health", _health)
    if owned:

        async def close_model(app: web.Application) -> None:
            served.close()

        app.on_cleanup.append(close_model)
    return app


async def _chat(request: web.Request) -> web.Response:
    served = request.app[MODEL_KEY]
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadRequest(f"the request body is not valid JSON: {err}", None) from None
    chat = parse_request(body, model_name=served.model_name, default_thinking=served.settings.enable_thinking)
    return web.json_response(await served.complete(chat))


async def _models(request: web.Request) -> web.Response:
    served = request.app[MODEL_KEY]
    entry = {
        "id": served.model_name,
        "object": "model",
        "created": 0,
        "owned_by": "mimesis-pl",
        "root": served.settings.model_dir,
        "parent": None,
        "revision": served.revision,
        "max_model_len": served.max_model_len,
    }
    return web.json_response({"object": "list", "data": [entry]})


async def _health(request: web.Request) -> web.Response:
    others = [t for t in request.app[IN_FLIGHT_KEY] if t is not asyncio.current_task()]
    return web.json_response({"ok": True, "model": request.app[MODEL_KEY].model_name, "in_flight": len(others)})
