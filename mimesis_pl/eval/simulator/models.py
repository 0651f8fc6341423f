"""Model access of the simulator-fidelity suites: the one chat-model protocol, a served and a scripted model.

Every role a suite talks to — the simulator under test, the fixed assistant/agent, the judge — is a
:class:`SuiteModel`: a :class:`~mimesis_pl.llm.ChatModel` (raises once its retries are spent) with a name and
revision for cache keys. The served one posts through the package's one chat-completions client
(:class:`mimesis_pl.llm.ChatCompletionsClient`, built from the role's :class:`~mimesis_pl.llm.Endpoint`:
retries, API key) and reads replies as the simulator-RL roles do (:func:`mimesis_pl.llm.role_client.reply_text`),
sending the suites' per-call sampling fields. The scripted one answers from a deterministic Python function, so
the tiny configs run offline.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from mimesis_pl.failures import InfrastructureFailure
from mimesis_pl.llm import ChatCompletionsClient, ChatModelSettings
from mimesis_pl.llm.chat_model import ChatModel
from mimesis_pl.llm.role_client import reply_text
from mimesis_pl.llm.served import key_for_listing, role_revision

Message = Mapping[str, str]


@runtime_checkable
class SuiteModel(ChatModel, Protocol):
    """A :class:`~mimesis_pl.llm.ChatModel` as the suites use it: a name and revision for cache keys. The suites
    send their sampling fields with every call (S24); the reply keeps the model's reasoning blocks."""

    name: str
    revision: str


class ServedChatModel:
    """A :class:`SuiteModel` on an OpenAI-compatible endpoint; failures raise ``failure`` (after retries)."""

    def __init__(self, settings: ChatModelSettings, failure: type[InfrastructureFailure]) -> None:
        settings.check(failure.__name__)
        self.settings = settings
        # what the server reports it serves, else the revision setting (E25)
        self.name = settings.label
        self.revision = role_revision(
            settings.revision, settings.base_url, settings.model, key_for_listing(settings.api_key_env)
        )
        self._client = ChatCompletionsClient(settings.endpoint(failure.__name__), failure)

    def body(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        s = self.settings  # a suite sends its sampling fields with every call (S24); None: the settings'
        body: dict[str, Any] = {
            "model": s.model,
            "messages": [dict(m) for m in messages],
            "temperature": s.temperature if temperature is None else temperature,
            "max_tokens": s.max_tokens if max_tokens is None else max_tokens,
            **s.extra_body,
        }
        if seed is not None:
            body["seed"] = seed
        return body | s.optional_body()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> str:
        body = self.body(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        who = f"{self.name} ({self.settings.model})"
        return await self._client.call(body, lambda payload: reply_text(payload, who, keep_reasoning=True), what=who)

    async def aclose(self) -> None:
        await self._client.aclose()


Responder = Callable[[Sequence[Message], int | None, float], str]


class ScriptedChatModel:
    """A :class:`SuiteModel` answering from a deterministic function ``(messages, seed, temperature) -> str``.

    The function may raise an :class:`InfrastructureFailure` to stand in for an endpoint that is down.
    ``calls`` counts completions (tests check that a resumed run makes no call for finished items).
    """

    def __init__(
        self, name: str, responder: Responder, revision: str = "unversioned", temperature: float = 0.0
    ) -> None:
        self.name, self.revision, self.responder = name, revision, responder
        self.temperature = temperature  # when a call names none
        self.calls = 0

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> str:
        self.calls += 1
        await asyncio.sleep(0)
        return self.responder(messages, seed, self.temperature if temperature is None else temperature)

    async def aclose(self) -> None:
        return None


def build_chat_model(
    settings: ChatModelSettings, role: str, failure: type[InfrastructureFailure], scripted: Responder
) -> SuiteModel:
    """The model ``settings`` asks for; ``scripted`` is the suite's offline stand-in for ``role``.

    A suite sends its sampling settings with every request (docs/decisions.md S24), so ``max_tokens`` must be set.
    """
    settings.check(role)
    if settings.max_tokens is None:
        raise ValueError(f"{role}.max_tokens must be set: a suite sends it with every request")
    if settings.served:
        return ServedChatModel(settings, failure)
    return ScriptedChatModel(settings.label, scripted, settings.revision, settings.temperature)


def sampling_identity(settings: ChatModelSettings) -> dict[str, Any]:
    """The settings of a role that can change its replies (hashed into cache keys; name and revision are
    in the run identity, endpoints and timeouts are not)."""
    return {
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "enable_thinking": settings.enable_thinking,
        "reasoning_effort": settings.reasoning_effort,
        "extra_body": settings.extra_body,
    }


def stable_hash(*parts: object) -> int:
    """A process-independent 64-bit hash (Python's ``hash`` of str is salted per process)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")
