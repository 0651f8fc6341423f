"""Clients of a running shim: episode URLs for the user simulator, privileged reads for the trainer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from mimesis_pl.shim.store import check_episode_id


class ShimError(RuntimeError):
    """A shim route answered with an error; ``status`` is the HTTP status (0 when unreachable)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def shim_root(base_url: str) -> str:
    """Normalise a shim URL to ``scheme://host:port[/prefix]`` with no trailing slash or ``/v1``.

    Accepts what configs tend to hold (``http://127.0.0.1:8710/``, ``…:8710/v1/``), so that episode
    URLs never come out as ``…/v1/ep/{id}/v1`` (docs/decisions.md A13).
    """
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"shim URL {base_url!r} must look like http://HOST:PORT")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class _Routes:
    def __init__(self, base_url: str, token: str | None) -> None:
        self.root = shim_root(base_url)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def episode_base_url(self, episode: str) -> str:
        return f"{self.root}/ep/{check_episode_id(episode)}/v1"

    def privileged_url(self, episode: str) -> str:
        return f"{self.root}/ep/{check_episode_id(episode)}/privileged"

    def episode_url(self, episode: str) -> str:
        return f"{self.root}/ep/{check_episode_id(episode)}"


def _error_message(method: str, url: str, status: int, raw: bytes) -> str:
    try:
        detail = json.loads(raw)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        detail = raw[:300].decode("utf-8", errors="replace")
    return f"shim {method} {url} failed with HTTP {status}: {detail}"


class ShimClient:
    """Blocking client of a shim at ``base_url`` (stdlib only, so it works in any worker).

    Args:
        base_url: the shim root, e.g. ``http://127.0.0.1:8710`` (a trailing ``/v1`` is ignored).
        token: bearer token for the privileged routes, when the shim has one.
        timeout_s: per request.
    """

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 10.0) -> None:
        self._routes = _Routes(base_url, token)
        self.timeout_s = timeout_s
        # Proxies from the environment must not see private reasoning, and loopback never needs one.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def base_url(self) -> str:
        return self._routes.root

    def episode_base_url(self, episode: str) -> str:
        """OpenAI ``base_url`` for the user simulator of ``episode``: ``{root}/ep/{episode}/v1``."""
        return self._routes.episode_base_url(episode)

    def privileged(self, episode: str) -> list[dict[str, Any]]:
        """Entries of ``episode`` (entry i = the user's i-th reply); [] when the shim does not know it."""
        return self.privileged_record(episode)["entries"]

    def privileged_record(self, episode: str) -> dict[str, Any]:
        """The full ``GET /ep/{episode}/privileged`` body: ``episode``, ``known``, ``count``, ``entries``."""
        return self._request("GET", self._routes.privileged_url(episode))

    def drop(self, episode: str) -> bool:
        """Forget ``episode`` on the shim; True when it was there."""
        return bool(self._request("DELETE", self._routes.episode_url(episode))["dropped"])

    def stats(self) -> dict[str, Any]:
        return self._request("GET", f"{self._routes.root}/stats")

    def health(self) -> bool:
        return bool(self._request("GET", f"{self._routes.root}/health").get("ok"))

    def _request(self, method: str, url: str) -> dict[str, Any]:
        request = urllib.request.Request(url, method=method, headers=self._routes.headers)
        try:
            with self._opener.open(request, timeout=self.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise ShimError(exc.code, _error_message(method, url, exc.code, exc.read())) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ShimError(0, f"shim {method} {url} unreachable: {reason}") from None


class AsyncShimClient:
    """The same calls as :class:`ShimClient` for async code; use as ``async with``, or ``await close()``."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 10.0) -> None:
        self._routes = _Routes(base_url, token)
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    @property
    def base_url(self) -> str:
        return self._routes.root

    def episode_base_url(self, episode: str) -> str:
        return self._routes.episode_base_url(episode)

    async def privileged(self, episode: str) -> list[dict[str, Any]]:
        return (await self.privileged_record(episode))["entries"]

    async def privileged_record(self, episode: str) -> dict[str, Any]:
        return await self._request("GET", self._routes.privileged_url(episode))

    async def drop(self, episode: str) -> bool:
        return bool((await self._request("DELETE", self._routes.episode_url(episode)))["dropped"])

    async def stats(self) -> dict[str, Any]:
        return await self._request("GET", f"{self._routes.root}/stats")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> AsyncShimClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _request(self, method: str, url: str) -> dict[str, Any]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        try:
            async with self._session.request(method, url, headers=self._routes.headers) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise ShimError(resp.status, _error_message(method, url, resp.status, raw))
                return json.loads(raw)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ShimError(0, f"shim {method} {url} unreachable: {type(exc).__name__}: {exc}") from None
