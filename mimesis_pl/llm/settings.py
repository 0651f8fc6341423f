"""The one YAML settings type of a served chat model: any role that is either an OpenAI-compatible server or
the package's offline stand-in (docs/decisions.md D16).

The simulator-RL judge, partner and support agent, the UserRL gyms' judges and the fidelity suites'
simulator, assistant/agent and judge are all a :class:`ChatModelSettings`; each consumer builds its client
from :meth:`ChatModelSettings.endpoint`. The simulator-RL roles and the gym judges start from the
reference's judge client (:func:`reference_role`), the suites from the class defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .endpoint import Endpoint

_HTTP = ("http://", "https://")


@dataclass
class ChatModelSettings:
    """One role's model: where it is served (or that it is scripted) and how it is sampled.

    Args:
        kind: ``openai`` (an OpenAI-compatible ``/v1/chat/completions`` server) or ``scripted`` (the
            consumer's deterministic offline stand-in for the role).
        model: served model name (the cache name of a scripted model).
        base_url: server root ending in ``/v1`` (``openai`` only).
        url: the same address under the simulator-RL roles' and gym judges' spelling; give one of the two
            (both, when they differ, is an error). After construction both hold the address.
        api_key_env: environment variable holding the API key (``None``: no auth header).
        revision: what was served (checkpoint tag / hash); the fidelity suites put it in every cache key.
        temperature: sampling temperature.
        max_tokens: completion cap (``None``: the server's default).
        reasoning_effort: sent unless ``None`` or ``"none"``.
        enable_thinking: forwarded as ``chat_template_kwargs.enable_thinking`` when set.
        extra_body: merged into every request body.
        timeout_s: per request.
        max_retries: extra attempts after a retryable failure (bounded: S29).
        retry_backoff_s: first wait between attempts; doubles each time.
        failure_rate: ``scripted`` simulator-RL judge only — the deterministic share of calls that fail (by a
            hash of the request), to exercise the failure path; 0 in real use.
    """

    kind: Literal["openai", "scripted"] = "scripted"
    model: str = "scripted"
    base_url: str | None = None
    url: str | None = None
    api_key_env: str | None = None
    revision: str = "unversioned"
    temperature: float = 0.7
    max_tokens: int | None = 1024
    reasoning_effort: str | None = None
    enable_thinking: bool | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 120.0
    max_retries: int = 2
    retry_backoff_s: float = 0.5
    failure_rate: float = 0.0

    def __post_init__(self) -> None:
        if self.url and self.base_url and self.url.rstrip("/") != self.base_url.rstrip("/"):
            raise ValueError(f"give base_url or url, not two addresses: base_url={self.base_url!r}, url={self.url!r}")
        self.base_url = self.url = self.base_url or self.url

    def check(self, role: str) -> None:
        """A ``ValueError`` naming ``role`` for an ``openai`` role without an http(s) address, an empty
        ``model``/``revision``, ``max_tokens`` < 1 or a negative temperature."""
        if self.kind == "openai":
            self.served_url(role)
        if not self.model or not self.revision:
            raise ValueError(f"{role}.model and {role}.revision must be non-empty")
        if (self.max_tokens is not None and self.max_tokens < 1) or self.temperature < 0:
            raise ValueError(f"{role}: max_tokens must be >= 1 and temperature >= 0")

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.model}"

    def endpoint(self, role: str = "model") -> Endpoint:
        """Where a served role's requests go; a ``ValueError`` naming ``role`` without an http(s) address."""
        return Endpoint.of(self, self.served_url(role))

    def served_url(self, role: str) -> str:
        """The address; a ``ValueError`` naming ``role`` when it is not http(s)."""
        if not (self.base_url or "").startswith(_HTTP):
            got = self.base_url
            raise ValueError(f"{role}: kind 'openai' needs url: http(s)://HOST/v1 (as base_url or url), got {got!r}")
        return str(self.base_url)

    def optional_body(self) -> dict[str, Any]:
        """The request fields sent only when set: ``chat_template_kwargs`` (from ``enable_thinking``) and
        ``reasoning_effort``. Each client places ``extra_body`` itself."""
        body: dict[str, Any] = {}
        if self.enable_thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": self.enable_thinking}
        if self.reasoning_effort not in (None, "none"):
            body["reasoning_effort"] = self.reasoning_effort
        return body


#: The reference's judge client, the defaults of the simulator-RL roles and of the UserRL gyms' judges
#: (S4, S29): its judge model, greedy, the server's completion cap, 300 s per request, 5 retries from 1 s.
REFERENCE_ROLE: dict[str, Any] = {
    "model": "gpt-5-5",
    "temperature": 0.0,
    "max_tokens": None,
    "timeout_s": 300.0,
    "max_retries": 5,
    "retry_backoff_s": 1.0,
}


def reference_role(**overrides: Any) -> ChatModelSettings:
    """A :class:`ChatModelSettings` on :data:`REFERENCE_ROLE`, with ``overrides`` (any field) on top."""
    return ChatModelSettings(**{**REFERENCE_ROLE, **overrides})
