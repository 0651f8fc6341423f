"""One HTTP client for ``/chat/completions`` calls: retries, API keys from a named env var, loop-safe sessions.

Used by the OpenAI-compatible user simulator and the coach, which differ only in how they read a reply
and which error they raise.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import aiohttp

from .redact import redacted_excerpt

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
T = TypeVar("T")


class RetryableError(Exception):
    """A failure worth another attempt: connection trouble, a timeout, HTTP 408/429/5xx, or what a caller says."""


class ChatCompletionsClient:
    """POSTs chat-completion bodies to ``url``.

    Args:
        url: the full ``…/v1/chat/completions`` address.
        api_key_env: name of the environment variable holding the key (``None``: no auth header).
        timeout_s: per request.
        max_retries: extra attempts after a :class:`RetryableError`, with backoff
            ``retry_backoff_s * 2**attempt``.
        error: the exception type raised for failures that are not retried (and after the last attempt).
    """

    def __init__(
        self,
        url: str,
        api_key_env: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        retry_backoff_s: float = 0.5,
        error: type[Exception] = RuntimeError,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.url = url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.error = error
        self._session: aiohttp.ClientSession | None = None

    async def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises :class:`RetryableError` or ``self.error``."""
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
            # A cut-off reply is where reasoning leaks: never quote it (errors reach logs and results).
            raise self.error(f"{self.url} returned non-JSON ({len(text)} chars, not shown)") from None
        if not isinstance(payload, dict):
            raise self.error(f"{self.url} returned {type(payload).__name__}, expected a JSON object")
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
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return self._session

    def _headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise self.error(f"environment variable {self.api_key_env!r} (api_key_env) is not set")
        return {"Authorization": f"Bearer {key}"}

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
