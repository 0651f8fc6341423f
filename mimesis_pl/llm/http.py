"""One HTTP client for ``/chat/completions`` calls: retries, API keys from a named env var, loop-safe sessions.

Built from an :class:`~mimesis_pl.llm.Endpoint`; used by the served users, the coach, the judge and partners,
the fidelity suites' models and the search API, which differ only in how they read a reply and which error
they raise.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

import aiohttp

from .endpoint import Endpoint, bearer_headers
from .redact import redacted_excerpt

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
T = TypeVar("T")


class RetryableError(Exception):
    """A failure worth another attempt: connection trouble, a timeout, HTTP 408/429/5xx, or what a caller says."""


class ChatCompletionsClient:
    """POSTs chat-completion bodies to ``endpoint.route(path)``.

    Args:
        endpoint: the server, its key variable, deadline and retries (:class:`~mimesis_pl.llm.Endpoint`);
            after a :class:`RetryableError` it tries ``max_retries`` more times, with backoff
            ``retry_backoff_s * 2**attempt``.
        error: the exception type raised for failures that are not retried (and after the last attempt).
        path: appended to ``endpoint.url`` (``""`` posts to the URL itself).
    """

    def __init__(
        self, endpoint: Endpoint, error: type[Exception] = RuntimeError, path: str = "/chat/completions"
    ) -> None:
        self.endpoint = endpoint
        self.url = endpoint.route(path)
        self.max_retries = endpoint.max_retries
        self.retry_backoff_s = endpoint.retry_backoff_s
        self.error = error
        self._session: aiohttp.ClientSession | None = None

    async def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises :class:`RetryableError` (transport trouble, HTTP 408/429/5xx, a 2xx body that is not
        a JSON object) or ``self.error``."""
        try:
            async with self._get_session().post(self.url, json=body, headers=self._headers()) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as err:
            raise RetryableError(f"{type(err).__name__} calling {self.url}: {err}") from None
        if status in RETRY_STATUSES:
            raise RetryableError(f"HTTP {status} from {self.url}: {error_detail(text)}")
        if status >= 400:
            raise self.error(f"HTTP {status} from {self.url}: {error_detail(text)}")
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            # A cut-off reply is where reasoning leaks: never quote it (errors reach logs and results). A proxy's
            # page or a cut body says nothing about the next attempt: retried like a transport error.
            raise RetryableError(f"{self.url} returned non-JSON ({len(text)} chars, not shown)") from None
        if not isinstance(payload, dict):
            raise RetryableError(f"{self.url} returned {type(payload).__name__}, expected a JSON object")
        return payload

    async def call(self, body: dict[str, Any], read: Callable[[dict[str, Any]], T] = lambda p: p, what: str = "") -> T:
        """``read(await post(body))`` with retries; ``read`` may raise :class:`RetryableError` too."""
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.retry_backoff_s * 2 ** (attempt - 1))
            try:
                return read(await self.post(body))
            except RetryableError as err:
                last = str(err)
        raise self.error(f"{what or self.url} failed after {self.max_retries + 1} attempts: {last}")

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        # A session belongs to the loop that made it; a fresh asyncio.run needs a fresh session.
        if self._session is None or self._session.closed or getattr(self._session, "_loop", loop) is not loop:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.endpoint.timeout_s))
        return self._session

    def _headers(self) -> dict[str, str]:
        return bearer_headers(self.endpoint.key(self.error))

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def error_detail(text: str) -> str:
    """What an error body says, for an exception: an OpenAI-style ``error.message`` (reasoning
    removed), never the raw body, which may be a cut-off reply."""
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return f"a body that is not JSON ({len(text)} chars, not shown)"
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str):
        return redacted_excerpt(message, limit=300)
    return f"a JSON body without error.message ({len(text)} chars, not shown)"
