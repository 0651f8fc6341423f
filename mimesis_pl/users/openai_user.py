"""OpenAIUser: a user simulator served behind an OpenAI-compatible ``/chat/completions`` endpoint.

Typically a MIMESIS simulator served by vLLM/SGLang behind the privileged shim; the
EnvironmentManager gives each episode its own base URL ``{shim}/ep/{episode_id}/v1`` through
:meth:`OpenAIUser.for_episode`. Replies are split into public text and reasoning whatever the server
does: ``<think>`` blocks inside ``content`` and the ``reasoning_content`` / ``reasoning`` fields both
end up in :attr:`UserReply.reasoning`, never in the public text.

A request that pre-fills the ``<think>`` opener (``enable_thinking: true``, or ``reasoning_prefilled``) gets a reply
that starts inside the reasoning: one that never closes it is all reasoning, an empty public reply (docs/decisions.md
A75). Behind a shim the shim makes that split and this client is built with ``reasoning_prefilled=False``.

Failures (connection errors, HTTP 429/5xx, an empty public reply) are retried ``max_retries`` times
with exponential backoff; then, and on other HTTP errors at once, :class:`UserSimulatorError` is
raised, which the EnvironmentManager records as ``user_error``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from mimesis_pl.chat.think import request_prefills_think, split_think, strip_reasoning
from mimesis_pl.envs.user_protocol import UserReply, UserSimulatorError
from mimesis_pl.llm import ChatCompletionsClient, Endpoint, RetryableError, http_url


class OpenAIUser:
    """User simulator over HTTP (OpenAI chat-completions protocol).

    Args:
        base_url: endpoint root ending in ``/v1`` (replaced per episode when a shim is configured).
        model: the served model name.
        api_key_env: name of the environment variable holding the API key (``None``: no auth header).
        temperature, max_tokens: sampling settings sent with every request.
        timeout_s: per-request deadline.
        max_retries: extra attempts after a retryable failure; ``retry_backoff_s`` doubles each time.
        extra_body: merged into every request body (e.g. ``{"top_p": 0.95}``).
        strip_prose_reasoning: also cut untagged prose chain-of-thought ("Thinking Process: …", as base
            Qwen3.5 writes it) down to what follows its hand-off label (:func:`~mimesis_pl.chat.strip_reasoning`);
            the cut text is kept as the turn's private reasoning.
        enable_thinking: sent as ``chat_template_kwargs.enable_thinking`` (vLLM, SGLang, ``mimesis-pl serve``);
            ``None`` sends nothing (the server's default).
        reasoning_prefilled: replies start inside a pre-filled ``<think>`` (``True``), never (``False``), or when
            the request turns thinking on (``None``).
        seed: sent with every request (``None``: none); the same seed and context give the same reply.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        retry_backoff_s: float = 0.5,
        extra_body: Mapping[str, Any] | None = None,
        strip_prose_reasoning: bool = False,
        enable_thinking: bool | None = None,
        reasoning_prefilled: bool | None = None,
        seed: int | None = None,
    ) -> None:
        self.endpoint = Endpoint(
            url=http_url(base_url, "base_url").rstrip("/"),
            model=model,
            api_key_env=api_key_env,
            timeout_s=timeout_s,
            max_retries=max_retries,
            retry_backoff_s=retry_backoff_s,
        )
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.strip_prose_reasoning = strip_prose_reasoning
        self.enable_thinking = enable_thinking
        self.reasoning_prefilled = reasoning_prefilled
        self.seed = seed
        self._client = ChatCompletionsClient(self.endpoint, UserSimulatorError)

    @property
    def base_url(self) -> str:
        return self.endpoint.url

    @property
    def model(self) -> str:
        return self.endpoint.model

    def for_episode(self, episode_id: str, base_url: str | None) -> OpenAIUser:
        """A fresh client for one episode, bound to ``base_url`` when given (its own connection pool)."""
        user = copy.copy(self)
        if base_url:
            user.endpoint = replace(self.endpoint, url=http_url(base_url, "base_url").rstrip("/"))
        user._client = ChatCompletionsClient(user.endpoint, UserSimulatorError)
        return user

    async def reply(self, messages: Sequence[Mapping[str, str]], *, episode_id: str) -> UserReply:
        body = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **({"seed": self.seed} if self.seed is not None else {}),
            **self.extra_body,
        }
        if self.enable_thinking is not None:
            kwargs = body.get("chat_template_kwargs")
            body["chat_template_kwargs"] = {
                **(kwargs if isinstance(kwargs, dict) else {}),
                "enable_thinking": self.enable_thinking,
            }
        prefilled = self.reasoning_prefilled if self.reasoning_prefilled is not None else request_prefills_think(body)

        def read(payload: dict[str, Any]) -> UserReply:
            reply = _reply_from(payload, self.base_url, self.strip_prose_reasoning, prefilled=prefilled)
            if not reply.public:
                raise RetryableError("the reply has no public text (reasoning only, or empty)")
            return reply

        return await self._client.call(body, read, what=f"user simulator at {self.base_url} for episode {episode_id!r}")

    async def aclose(self) -> None:
        await self._client.aclose()


def _reply_from(
    payload: Mapping[str, Any], where: str, strip_prose: bool = False, *, prefilled: bool = False
) -> UserReply:
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        # The payload itself is not quoted: it may hold reasoning fields.
        raise UserSimulatorError(f"{where}: response has no choices (keys: {sorted(payload)[:10]})")
    message = choices[0].get("message") or {}
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise UserSimulatorError(f"{where}: message content is {type(content).__name__}, expected a string")
    # vLLM/SGLang reasoning parsers move the reasoning to one of these fields; then the content is already
    # public, else a pre-filled opener means the content starts inside the reasoning.
    separate = message.get("reasoning_content") or message.get("reasoning")
    inline, public = split_think(content, prefilled=prefilled and not separate)
    if strip_prose:
        spoken = strip_reasoning(public)
        if spoken != public:  # the prose reasoning stays private, like a <think> block
            inline = "\n".join(p for p in (inline, public[: len(public) - len(spoken)].strip()) if p)
            public = spoken
    parts = [p.strip() for p in (separate if isinstance(separate, str) else None, inline) if p and p.strip()]
    return UserReply(public=public, reasoning="\n".join(parts) or None)
