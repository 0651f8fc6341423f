"""One description of an OpenAI-compatible endpoint, and the one place an API key is read.

Every served role — the simulator-RL judge and partners, the fidelity suites' models, the served users, the
coach, the evaluation agents, the served rollout engines, the search API — reaches its server through an
:class:`Endpoint` built from its own YAML settings (their ``endpoint()``, or :meth:`Endpoint.of`), so
address, model, key, deadline and retries mean the same everywhere (docs/decisions.md D10). A key is only
ever read by :func:`api_key`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

from .secrets import remember_secret


def api_key(env_name: str | None, *, where: str, error: type[Exception] = ValueError) -> str | None:
    """The key held by environment variable ``env_name``; ``None`` when no variable is named (``None`` or ``""``).

    A named variable that is unset or empty raises ``error`` with ``where`` (the setting or flag that names
    it), never an unauthenticated request (docs/decisions.md D12).
    """
    if not env_name:
        return None
    value = os.environ.get(env_name)
    if not value:
        raise error(f"{where} names environment variable {env_name!r}, but {env_name} is not set or empty")
    remember_secret(value)  # redacted from every error text stored, logged or printed from now on (D22)
    return value


def http_url(url: str | None, where: str) -> str:
    """``url`` when it is an ``http(s)://`` address; else a ``ValueError`` naming ``where`` (the setting)."""
    if not (url or "").startswith(("http://", "https://")):
        raise ValueError(f"{where} must be an http(s) URL, got {url!r}")
    return str(url)


def bearer_headers(key: str | None) -> dict[str, str]:
    """``Authorization: Bearer <key>``, or no header without a key."""
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class Endpoint:
    """Where and how one role's requests go.

    Args:
        url: the server address the role's paths are appended to (``http://HOST:PORT/v1`` for chat models;
            the full address for an API that has no sub-path).
        model: the served model's name (empty for an API without one).
        api_key_env: environment variable holding the key (``None``: no auth header); read by :meth:`key`.
        timeout_s: per request.
        max_retries: extra attempts after a retryable failure (bounded).
        retry_backoff_s: first wait between attempts; doubles each time.
    """

    url: str
    model: str = ""
    api_key_env: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 2
    retry_backoff_s: float = 0.5

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")

    @classmethod
    def of(cls, settings: Any, url: str, **overrides: Any) -> Endpoint:
        """The endpoint a role's YAML settings describe: ``url`` (each role names its own address field), then
        every other field of this class that ``settings`` has under the same name (``model``, ``api_key_env``,
        ``timeout_s``, ``max_retries``, ``retry_backoff_s``; a role without one takes the default here), then
        ``overrides`` (for a role that spells a field otherwise)."""
        names = [f.name for f in fields(cls) if f.name != "url"]
        shared = {name: getattr(settings, name) for name in names if hasattr(settings, name)}
        return cls(url=url, **{**shared, **overrides})

    def route(self, path: str) -> str:
        """``url`` with ``path`` appended (no doubled slash)."""
        return self.url.rstrip("/") + path if path else self.url

    def key(self, error: type[Exception] = ValueError, where: str = "api_key_env") -> str | None:
        """The API key (:func:`api_key`: ``error`` naming ``where`` when ``api_key_env`` names an unset variable)."""
        return api_key(self.api_key_env, where=where, error=error)


def openai_sdk_client(endpoint: Endpoint, api_key: str | None = None, *, where: str = "api_key_env") -> Any:
    """An ``openai.AsyncOpenAI`` for ``endpoint``: ``api_key`` when given, else the key :meth:`Endpoint.key`
    reads (``"EMPTY"``, which local servers accept, when neither names one); the endpoint's deadline and retries."""
    import openai

    key = api_key if api_key is not None else endpoint.key(where=where)
    return openai.AsyncOpenAI(
        base_url=endpoint.url, api_key=key or "EMPTY", timeout=endpoint.timeout_s, max_retries=endpoint.max_retries
    )
