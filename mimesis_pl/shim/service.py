"""``PrivilegedShim``: the shim as an object that starts and stops inside any event loop."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable

from aiohttp import web

from mimesis_pl.shim.guard import endpoint_key
from mimesis_pl.shim.server import IN_FLIGHT_KEY, create_app
from mimesis_pl.shim.store import PrivilegedStore, StoreLimits
from mimesis_pl.shim.upstream import UpstreamClient

log = logging.getLogger(__name__)


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` names and loopback addresses (127.0.0.0/8, ::1)."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


class PrivilegedShim:
    """The privileged-channel proxy in front of one OpenAI-compatible upstream.

    ``await start()`` binds and returns the base URL (``port=0`` picks a free port); ``await stop()``
    closes it. :class:`~mimesis_pl.shim.background.ServerThread` runs it from synchronous code, and
    ``mimesis-pl shim`` (:func:`mimesis_pl.shim.serve.main`) runs it as a process. A coach gets its
    own instance; see :func:`~mimesis_pl.shim.guard.check_distinct_endpoints`.

    Args:
        upstream_url: API root of the upstream, e.g. ``http://127.0.0.1:8000/v1``.
        host: bind address; loopback by default because the privileged routes expose the user's
            private reasoning. Binding elsewhere without a ``token`` is refused.
        port: TCP port; 0 lets the OS choose (read it back from :attr:`base_url`).
        token: bearer token required on every route (completions, privileged reads, deletes, stats).
        limits: TTL and size bounds of the store (ignored when ``store`` is given).
        store: an existing store to serve, e.g. one shared with in-process readers.
        upstream_api_key: key the shim sends upstream (``"EMPTY"`` servers need none).
        model_override: model name forced into every forwarded request.
        reasoning_prefilled: the upstream's replies start inside a pre-filled ``<think>`` (``True``), never
            (``False``), or as each request's ``chat_template_kwargs.enable_thinking`` says (``None``, A75).
        restore_reasoning: give a thinking simulator's earlier turns back their stored reasoning (A78).
        upstream_timeout_s: limit of one upstream call; beyond it the caller gets HTTP 504.
        max_upstream_connections: pooled connections to the upstream.
        max_request_bytes: largest request body accepted.
        shutdown_timeout_s: how long ``stop()`` lets in-flight requests finish before cancelling them.
    """

    def __init__(
        self,
        upstream_url: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        limits: StoreLimits | None = None,
        store: PrivilegedStore | None = None,
        upstream_api_key: str | None = None,
        model_override: str | None = None,
        reasoning_prefilled: bool | None = None,
        restore_reasoning: bool = True,
        upstream_timeout_s: float = 300.0,
        max_upstream_connections: int = 256,
        max_request_bytes: int = 32 * 1024 * 1024,
        shutdown_timeout_s: float = 10.0,
    ) -> None:
        if store is not None and limits is not None:
            raise ValueError("PrivilegedShim: pass either `limits` or `store`, not both")
        if not 0 <= port <= 65535:
            raise ValueError(f"PrivilegedShim: port must be in 0..65535, got {port}")
        self.host = host
        self.port = port
        self.store = store if store is not None else PrivilegedStore(limits)
        self._upstream = UpstreamClient(
            upstream_url,
            api_key=upstream_api_key,
            timeout_s=upstream_timeout_s,
            max_connections=max_upstream_connections,
        )
        self._token = token
        self._model_override = model_override
        self._reasoning_prefilled = reasoning_prefilled
        self._restore_reasoning = restore_reasoning
        self._max_request_bytes = max_request_bytes
        self._shutdown_timeout_s = shutdown_timeout_s
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None

    @property
    def upstream_url(self) -> str:
        """The full chat-completions URL requests are forwarded to."""
        return self._upstream.url

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` of the running shim (episode clients use ``{base_url}/ep/{id}/v1``)."""
        if self._base_url is None:
            raise RuntimeError("PrivilegedShim is not running; await start() first")
        return self._base_url

    @property
    def bind_url(self) -> str:
        """``http://HOST:PORT`` as bound (``0.0.0.0`` stays ``0.0.0.0``; :attr:`base_url` is where to connect)."""
        if self._base_url is None:
            raise RuntimeError("PrivilegedShim is not running; await start() first")
        host = self.host.strip("[]")
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    async def start(self) -> str:
        """Bind, start serving, and return :attr:`base_url`."""
        if self._runner is not None:
            raise RuntimeError(f"PrivilegedShim already running at {self._base_url}")
        if not is_loopback_host(self.host) and not self._token:
            raise ValueError(
                f"refusing to bind the shim to {self.host} without a token: anyone who reaches it could read "
                "private reasoning and use the upstream; set a token (--token-env NAME) or bind to 127.0.0.1"
            )
        sock = bind_socket(self.host, self.port)
        if endpoint_key(self._upstream.url) == endpoint_key(f"http://{url_host(self.host)}:{sock.getsockname()[1]}"):
            sock.close()
            raise ValueError(
                f"shim upstream {self._upstream.url} is the shim's own address {self.host}:{self.port}; "
                "point --upstream at the model server"
            )
        app = create_app(
            self._upstream,
            self.store,
            token=self._token,
            model_override=self._model_override,
            reasoning_prefilled=self._reasoning_prefilled,
            restore_reasoning=self._restore_reasoning,
            max_request_bytes=self._max_request_bytes,
        )
        # handler_cancellation: a caller that hangs up (client timeout) cancels the upstream call
        # and stores nothing, so its retry does not leave an extra entry that shifts alignment.
        runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=self._shutdown_timeout_s
        )
        try:
            await runner.setup()
            await web.SockSite(runner, sock).start()
        except BaseException:
            await runner.cleanup()
            sock.close()
            raise
        self._runner = runner
        self.port = sock.getsockname()[1]
        self._base_url = f"http://{url_host(self.host)}:{self.port}"
        return self._base_url

    async def stop(self) -> None:
        """Stop serving and close the upstream session; a no-op when not running.

        In-flight requests get ``shutdown_timeout_s`` in all to finish, then are cancelled (their
        callers see the connection close). aiohttp's own shutdown would wait that long twice.
        """
        runner, self._runner = self._runner, None
        if runner is not None:
            for site in list(runner.sites):
                await site.stop()  # accept nothing new
            await finish_in_flight(runner.app[IN_FLIGHT_KEY], self._shutdown_timeout_s)
            await runner.cleanup()
        self._base_url = None

    async def serve_forever(
        self, stop: asyncio.Event | None = None, on_ready: Callable[[str], None] | None = None
    ) -> None:
        """Start, call ``on_ready(base_url)``, serve until ``stop`` is set (or cancelled), then stop."""
        stop = stop or asyncio.Event()
        await self.start()
        try:
            if on_ready is not None:
                on_ready(self.base_url)
            await stop.wait()
        finally:
            await self.stop()


async def finish_in_flight(tasks: set[asyncio.Task], timeout_s: float, what: str = "shim") -> None:
    """Let the request ``tasks`` still running finish within ``timeout_s`` in all, then cancel the rest."""
    pending = {t for t in tasks if not t.done()}
    if pending:
        _, pending = await asyncio.wait(pending, timeout=timeout_s)
    if pending:
        log.warning("%s stopping: cancelling %d request(s) still in flight", what, len(pending))
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=1.0)


def bind_socket(host: str, port: int, what: str = "the shim") -> socket.socket:
    """A listening socket on ``host:port`` (IPv6 when the host is), or an OSError naming ``what`` and the address."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=1024)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot bind {what} to {host}:{port}: {exc.strerror or exc}") from exc


def url_host(host: str) -> str:
    """The host to put in a URL that reaches a server bound to ``host`` (any-address binds become loopback)."""
    host = host.strip("[]")
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"  # all interfaces: loopback is the address that surely reaches it
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
