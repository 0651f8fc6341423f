"""Run an async server from synchronous code (a Lightning job, a test) on a private event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class AsyncServer(Protocol):
    async def start(self) -> str: ...

    async def stop(self) -> None: ...


class ServerThread:
    """Runs ``server`` (anything with ``async start() -> url`` and ``async stop()``, such as
    :class:`~mimesis_pl.shim.service.PrivilegedShim`) on its own event loop in a daemon thread.

    Usage::

        with ServerThread(PrivilegedShim("http://127.0.0.1:8000/v1")) as shim:
            client = ShimClient(shim.base_url)
            ...

    ``start()`` returns only once the server accepts connections, and re-raises its start error
    (e.g. a port in use) in the calling thread. ``stop()`` is idempotent.
    """

    def __init__(self, server: AsyncServer, *, name: str = "mimesis-shim", timeout_s: float = 30.0) -> None:
        self.server = server
        self._name = name
        self._timeout_s = timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError(f"{self._name} is not running; call start() first")
        return self._base_url

    def start(self) -> str:
        if self._thread is not None:
            raise RuntimeError(f"{self._name} already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=_run_loop, args=(loop,), name=self._name, daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            self._base_url = self.call(self.server.start)
        except BaseException:
            self._shutdown_loop()
            raise
        return self._base_url

    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` on the server's loop and wait for its result (bounded by ``timeout_s``)."""
        if self._loop is None:
            raise RuntimeError(f"{self._name} is not running")

        async def run() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(self._timeout_s)

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            self.call(self.server.stop)
        finally:
            self._base_url = None
            self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop, self._thread = None, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(self._timeout_s)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> ServerThread:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        # Let cancelled tasks (aborted handlers, closing connections) finish before the loop dies.
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
