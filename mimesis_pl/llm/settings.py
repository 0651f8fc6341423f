"""The one YAML settings type of a role's chat model: an OpenAI-compatible server or the package's offline
stand-in (docs/decisions.md D16, D32), chosen by ``class_path``::

    judge:
      class_path: mimesis_pl.llm.ServedChatSettings     # or ScriptedChatSettings
      init_args: {url: http://127.0.0.1:8001/v1, model: my-judge}

The simulator-RL judge, partner and support agent, the UserRL gyms' judges and the fidelity suites'
simulator, assistant/agent and judge are all a :class:`ChatModelSettings`; each consumer builds its client
from :meth:`ChatModelSettings.endpoint`. The simulator-RL roles and the gym judges start from the
reference's judge client (:func:`reference_role`: a ``class_path`` switch keeps the fields it shares), the suites
from the class defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .endpoint import Endpoint

_HTTP = ("http://", "https://")


class ChatModelSettings:
    """Base of a role's model, chosen in YAML by ``class_path`` (one idiom for every part, issue #38):

    - :class:`ServedChatSettings`: an OpenAI-compatible ``/v1/chat/completions`` server;
    - :class:`ScriptedChatSettings`: the consumer's deterministic offline stand-in for the role.

    Both carry the same fields (:class:`ChatModelFields`); a consumer builds its served client from
    :meth:`endpoint` when :attr:`served` is true, else its own stand-in. ``kind`` names the class in labels and
    cache keys (``"openai"``, ``"scripted"``: the strings the ``kind:`` option used to hold, so keys are unchanged).
    """

    kind: ClassVar[str] = ""
    #: The role is a served model (build its client from :meth:`endpoint`).
    served: ClassVar[bool] = False

    def check(self, role: str) -> None:
        """A ``ValueError`` naming ``role`` for a served role without an http(s) address, an empty
        ``model``/``revision``, ``max_tokens`` < 1 or a negative temperature."""
        if self.served:
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
            raise ValueError(
                f"{role}: ServedChatSettings needs url: http(s)://HOST/v1 (as base_url or url), got {got!r}"
            )
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

    if TYPE_CHECKING:  # the fields every subclass has (ChatModelFields)
        model: str
        base_url: str | None
        url: str | None
        api_key_env: str | None
        revision: str
        temperature: float
        max_tokens: int | None
        reasoning_effort: str | None
        enable_thinking: bool | None
        extra_body: dict[str, Any]
        timeout_s: float
        max_retries: int
        retry_backoff_s: float
        failure_rate: float


@dataclass
class ChatModelFields:
    """The fields of every :class:`ChatModelSettings`.

    Args:
        model: served model name (the cache name of a scripted model).
        base_url: server root ending in ``/v1`` (served only).
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
        failure_rate: scripted simulator-RL judge only — the deterministic share of calls that fail (by a
            hash of the request), to exercise the failure path; 0 in real use.
    """

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


@dataclass
class ServedChatSettings(ChatModelFields, ChatModelSettings):
    """A role served by an OpenAI-compatible ``/v1/chat/completions`` server at ``url`` (fields:
    :class:`ChatModelFields`)."""

    kind: ClassVar[str] = "openai"
    served: ClassVar[bool] = True


@dataclass
class ScriptedChatSettings(ChatModelFields, ChatModelSettings):
    """The consumer's deterministic offline stand-in for the role (the default; fields: :class:`ChatModelFields`,
    of which it reads ``model``, ``revision`` and the sampling fields for cache keys, and ``failure_rate``)."""

    kind: ClassVar[str] = "scripted"


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


def reference_role(
    cls: type[ServedChatSettings | ScriptedChatSettings] = ScriptedChatSettings, **overrides: Any
) -> ServedChatSettings | ScriptedChatSettings:
    """A ``cls`` (:class:`ScriptedChatSettings` unless given) on :data:`REFERENCE_ROLE`, with ``overrides`` (any
    field) on top."""
    return cls(**{**REFERENCE_ROLE, **overrides})
