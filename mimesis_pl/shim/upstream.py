"""The shim's connection to its OpenAI-compatible upstream (vLLM, SGLang, any chat-completions server).

Every failure becomes an :class:`UpstreamError` carrying the HTTP status the shim answers with, so
callers get one clear JSON error instead of a traceback or a silently empty reply. Its ``message``
(what callers see) never quotes the upstream's body: a truncated or error body can carry the
simulator's private reasoning. What the upstream said goes to ``diagnostic``, with reasoning removed,
for the shim's own log.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from mimesis_pl.llm.redact import redacted_excerpt

_SEE_LOG = "the upstream's answer is in the shim's log, not repeated here"


class UpstreamError(Exception):
    """An upstream call failed; ``status`` is what the shim answers, ``upstream_status`` what it got.

    ``message`` is safe to send to callers (it never quotes the upstream body); ``diagnostic`` is
    the upstream body with reasoning removed, for the shim's own log only.
    """

    def __init__(self, status: int, message: str, upstream_status: int | None = None, diagnostic: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.upstream_status = upstream_status
        self.diagnostic = diagnostic


def completions_url(base_url: str) -> str:
    """``http://h:8000`` or ``http://h:8000/v1/`` -> ``http://h:8000/v1/chat/completions``.

    A URL with no path gets ``/v1`` (what vLLM and SGLang serve); any other path is kept as the API
    root, so servers mounted under a prefix work too.
    """
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"upstream URL {base_url!r} must look like http://HOST:PORT[/v1]")
    if parts.query or parts.fragment:
        raise ValueError(f"upstream URL {base_url!r} must not carry a query or fragment")
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        path = path[: -len("/chat/completions")]
    path = (path or "/v1") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class UpstreamClient:
    """One pooled aiohttp session to ``{base_url}/chat/completions``.

    Args:
        base_url: the upstream API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: sent as ``Authorization: Bearer``; the caller's own Authorization header is never
            forwarded (it authenticates to the shim, not to the upstream).
        timeout_s: total time for one upstream call (connect + generate + read).
        max_connections: pooled connections; requests beyond it wait for a free one.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        max_connections: int = 256,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"upstream timeout_s must be > 0, got {timeout_s!r}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections!r}")
        self.url = completions_url(base_url)
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        # Created inside the running loop: an aiohttp session is bound to the loop that made it.
        connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0)
        self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def chat_completions(self, body: dict[str, Any]) -> Any:
        """POST ``body`` upstream and return the decoded JSON reply, or raise :class:`UpstreamError`."""
        if self._session is None:
            raise RuntimeError("UpstreamClient.start() was not awaited before chat_completions()")
        try:
            async with self._session.post(self.url, data=json.dumps(body), headers=self._headers) as resp:
                raw = await resp.read()
                status = resp.status
        except TimeoutError:
            raise UpstreamError(504, f"upstream {self.url} did not answer within {self.timeout_s:g} s") from None
        except aiohttp.ClientConnectionError as exc:
            raise UpstreamError(502, f"cannot reach upstream {self.url}: {type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise UpstreamError(502, f"upstream {self.url} failed: {type(exc).__name__}: {exc}") from None
        if status >= 400:
            raise _status_error(self.url, status, raw)
        try:
            return json.loads(raw)
        except ValueError:
            raise UpstreamError(
                502,
                f"upstream {self.url} answered HTTP {status} with a body that is not JSON "
                f"({len(raw)} bytes); {_SEE_LOG}",
                status,
                diagnostic=redacted_excerpt(raw),
            ) from None


def _status_error(url: str, status: int, raw: bytes) -> UpstreamError:
    diagnostic = redacted_excerpt(raw)
    if status in (401, 403):
        # The caller cannot fix the shim's credentials; do not let it think its own key is wrong.
        return UpstreamError(
            502,
            f"upstream {url} rejected the shim's credentials (HTTP {status}); check the shim's upstream API key",
            status,
            diagnostic,
        )
    if status >= 500:
        return UpstreamError(502, f"upstream {url} failed with HTTP {status}; {_SEE_LOG}", status, diagnostic)
    # Other 4xx (bad request, unknown model, context too long, 429 rate limit) are the caller's to
    # handle, so the status is passed through; the OpenAI client retries 429 by itself.
    return UpstreamError(status, f"upstream {url} refused the request (HTTP {status}); {_SEE_LOG}", status, diagnostic)
