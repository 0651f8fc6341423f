"""The one client of a served chat role (simulator-RL judge, partner and support agent; a gym's judge): the request
body a :class:`~mimesis_pl.llm.ChatModelSettings` asks for, sent with bounded retries, the reply's text read from the
payload (:func:`reply_text`). The fidelity suites' served models read replies with the same :func:`reply_text`."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .chat_model import RoleCallFailed
from .http import ChatCompletionsClient, RetryableError
from .settings import ChatModelSettings

Messages = Sequence[Mapping[str, str]]
#: Requests each client keeps for inspection (leak scans, debugging); older ones are dropped.
KEEP_REQUESTS = 512


def request_log() -> deque[list[dict[str, str]]]:
    return deque(maxlen=KEEP_REQUESTS)


def reply_text(payload: Mapping[str, Any], who: str, keep_reasoning: bool = False) -> str:
    """The text of a chat-completion payload; with ``keep_reasoning`` a ``reasoning_content``/``reasoning``
    field is re-attached as a leading ``<think>`` block. No message, or an empty reply, is a
    :class:`RetryableError` (an empty reply is an error, never a silent empty turn)."""
    try:
        message = payload["choices"][0]["message"]
        content = message.get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise RetryableError(f"{who}: response has no choices[0].message") from None
    if keep_reasoning:
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning and "<think>" not in content:
            content = f"<think>\n{reasoning}\n</think>\n\n{content}"
    if not content.strip():
        raise RetryableError(f"{who}: empty completion")
    return content


class RoleClient:
    """A role served behind ``{url}/chat/completions``. :meth:`request` sends a body and raises ``error`` (the
    caller's failure type) once retries are spent; ``failures`` and ``requests`` are for the caller's counts and
    leak scans."""

    def __init__(self, settings: ChatModelSettings, role: str, error: type[Exception] = RoleCallFailed) -> None:
        self.settings = settings
        self.role = role
        self.failures = 0
        self.requests = request_log()
        self._error = error
        self._client = ChatCompletionsClient(settings.endpoint(role), error)

    def body(
        self,
        messages: Messages,
        json_mode: bool = False,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """The request body: the settings' sampling fields unless given here."""
        s = self.settings
        body: dict[str, Any] = {
            "model": s.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": s.temperature if temperature is None else temperature,
        }
        cap = s.max_tokens if max_tokens is None else max_tokens
        if cap is not None:
            body["max_completion_tokens"] = cap
        if seed is not None:
            body["seed"] = seed
        body |= {**s.extra_body, **s.optional_body()}
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    async def request(
        self, body: dict[str, Any], read: Callable[[str], Any] = lambda text: text, keep_reasoning: bool = False
    ) -> Any:
        """``read(reply text)`` of ``body`` with bounded retries (``read`` may raise :class:`RetryableError`);
        raises the client's ``error`` after the last attempt."""
        self.requests.append(list(body["messages"]))
        who = f"{self.role} ({self.settings.model})"
        return await self._client.call(body, lambda payload: read(reply_text(payload, who, keep_reasoning)), what=who)

    async def aclose(self) -> None:
        await self._client.aclose()
