"""Start and stop the model server: inside an event loop (:class:`ModelServer`), or from synchronous code
in a thread of the calling process (:func:`start_in_background`, e.g. inside a training job)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..llm.endpoint import api_key
from ..shim.background import ServerThread
from ..shim.service import bind_socket, finish_in_flight, is_loopback_host, url_host
from .app import IN_FLIGHT_KEY, create_app
from .generation import ServedModel
from .settings import ServeSettings

log = logging.getLogger(__name__)


class ModelServer:
    """``await start()`` binds and returns the API root ``http://HOST:PORT/v1``; ``await stop()`` lets
    in-flight requests finish (up to ``shutdown_timeout_s``), then stops and frees the model.

    ``served`` is loaded from ``settings`` when not given. A non-loopback ``host`` without
    ``settings.token_env`` is refused, as the shim refuses it.
    """

    def __init__(
        self, settings: ServeSettings, *, served: ServedModel | None = None, shutdown_timeout_s: float = 300.0
    ) -> None:
        if not is_loopback_host(settings.host) and not settings.token_env:
            raise ValueError(
                f"refusing to serve on {settings.host} without a token: anyone who reaches it could use the model; "
                "set token_env (--token-env NAME) or bind to 127.0.0.1"
            )
        api_key(settings.token_env, where="ServeSettings.token_env")  # an unset variable fails before loading
        self.settings = settings
        self.served = served if served is not None else ServedModel(settings)
        self.shutdown_timeout_s = shutdown_timeout_s
        self.port = settings.port
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    async def start(self) -> str:
        if self._runner is not None:
            raise RuntimeError(f"the model server already runs at {self.url}")
        sock = bind_socket(self.settings.host, self.settings.port, "mimesis-pl serve")
        runner = web.AppRunner(create_app(self.settings, served=self.served), access_log=None)
        try:
            await runner.setup()
            await web.SockSite(runner, sock).start()
        except BaseException:
            await runner.cleanup()
            sock.close()
            raise
        self._runner = runner
        self.port = sock.getsockname()[1]
        self.url = f"http://{url_host(self.settings.host)}:{self.port}/v1"
        return self.url

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            for site in list(runner.sites):
                await site.stop()  # accept nothing new
            await finish_in_flight(runner.app[IN_FLIGHT_KEY], self.shutdown_timeout_s, "mimesis-pl serve")
            await runner.cleanup()
        self.served.close()

    async def serve_forever(self, stop: asyncio.Event, on_ready: Callable[[str], None] | None = None) -> None:
        """Start, call ``on_ready(url)``, serve until ``stop`` is set, then stop (in-flight requests finish)."""
        await self.start()
        try:
            if on_ready is not None:
                on_ready(self.url)
            await stop.wait()
        finally:
            await self.stop()


class BackgroundModelServer:
    """A :class:`ModelServer` on its own event loop in a daemon thread of this process.

    ``url`` is the API root (``http://127.0.0.1:PORT/v1``), ``model_name`` the served name, ``revision``
    the export's :func:`~mimesis_pl.serve.revision.revision_of`. ``close()`` finishes in-flight requests,
    then stops; it is idempotent. Usable as a context manager.
    """

    def __init__(self, server: ModelServer) -> None:
        self.server = server
        self.model_name = server.served.model_name
        self.revision = server.served.revision
        self._thread = ServerThread(server, name="mimesis-serve", timeout_s=server.shutdown_timeout_s + 30)
        try:
            self.url = self._thread.start()
        except BaseException:
            server.served.close()
            raise

    @property
    def served(self) -> ServedModel:
        return self.server.served

    def close(self) -> None:
        self._thread.stop()

    def __enter__(self) -> BackgroundModelServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def start_in_background(settings: ServeSettings, *, served: ServedModel | None = None) -> BackgroundModelServer:
    """Load ``settings.model_dir`` (its own copy of the weights) and serve it from a thread; returns once it accepts."""
    return BackgroundModelServer(ModelServer(settings, served=served))
