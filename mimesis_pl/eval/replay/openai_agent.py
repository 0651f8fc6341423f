"""An agent under test served behind any OpenAI-compatible chat endpoint (vLLM, SGLang, a proxy)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import openai

from mimesis_pl.chat.think import split_think
from mimesis_pl.chat.tool_calls import ToolCall
from mimesis_pl.checks import check_choice
from mimesis_pl.eval.replay.agent import AgentDecision, decision_from_text
from mimesis_pl.eval.replay.plan import ReplayRequest
from mimesis_pl.eval.values import canonical_json
from mimesis_pl.failures import AgentTransportFailure
from mimesis_pl.llm import Endpoint, openai_sdk_client


def render_context_message(context: Mapping[str, Any]) -> dict[str, str]:
    """The request context as a system message; JSON keeps every value exactly as the case gives it."""
    return {"role": "system", "content": "Request context (JSON): " + canonical_json(context)}


def request_messages(
    request: ReplayRequest, context_mode: Literal["system", "none"] = "system"
) -> list[dict[str, Any]]:
    """The request's messages as fresh dicts, with the request context as a system message after the
    case's own system prompt (``context_mode="system"``). Every agent kind sends the same messages."""
    check_choice("context_mode", context_mode, ("system", "none"))
    payload = request.to_openai()
    messages = payload["messages"]
    if context_mode == "system" and payload["context"]:
        at = 1 if messages and messages[0]["role"] == "system" else 0
        messages.insert(at, render_context_message(payload["context"]))
    return messages


def decision_from_message(message: Mapping[str, Any]) -> AgentDecision:
    """Read a decision from an OpenAI ``choices[0].message`` (as a dict).

    Structured ``tool_calls`` win; without them the content is parsed for ``<tool_call>`` blocks, since
    servers without a tool parser return calls as text. Reasoning may arrive as ``reasoning_content``,
    ``reasoning`` or inline ``<think>`` blocks.
    """
    raw = json.dumps(message, ensure_ascii=False, sort_keys=True)
    content = message.get("content") or ""
    side_reasoning = message.get("reasoning_content") or message.get("reasoning")
    calls_raw = message.get("tool_calls") or []
    if not calls_raw:
        decision = decision_from_text(content)
        reasoning = "\n".join(r for r in (side_reasoning, decision.reasoning) if r) or None
        return AgentDecision(decision.tool_calls, decision.text, raw, reasoning, decision.parse_error)
    inline_reasoning, text = split_think(content)
    reasoning = "\n".join(r for r in (side_reasoning, inline_reasoning) if r) or None
    calls: list[ToolCall] = []
    for i, call in enumerate(calls_raw):
        function = call.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments") or "{}"
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError as err:
            return AgentDecision(
                text=text,
                raw=raw,
                reasoning=reasoning,
                parse_error=f"tool call {i} ({name}): arguments are not JSON ({err.msg})",
            )
        if not isinstance(name, str) or not name or not isinstance(parsed, dict):
            return AgentDecision(
                text=text,
                raw=raw,
                reasoning=reasoning,
                parse_error=f"tool call {i}: needs a name and an object of arguments, got {function!r}",
            )
        calls.append(ToolCall(name=name, arguments=parsed))
    return AgentDecision(tool_calls=tuple(calls), text=text, raw=raw, reasoning=reasoning)


class OpenAIChatAgent:
    """A :class:`~mimesis_pl.eval.replay.agent.ChatAgent` calling ``{base_url}/chat/completions``.

    Args:
        base_url: the server's OpenAI base URL, e.g. ``http://127.0.0.1:8100/v1``.
        model: model name as the server knows it.
        api_key: key to send; ``api_key_env`` names an environment variable holding it instead
            (secrets stay out of configs). Local servers accept the placeholder ``"EMPTY"``.
        temperature: sampling temperature (0 for evaluation).
        max_tokens: completion budget per decision.
        tool_choice: ``"auto"`` lets the agent reply in text; ``"required"`` forces a call.
        context_mode: ``"system"`` sends the request context as a system message after the case's own
            system prompt; ``"none"`` does not send it.
        timeout_s: per-request HTTP timeout; failures raise ``AgentTransportFailure`` (retried by the
            executor and reported unscored, never as a wrong answer).
        extra_body: extra JSON fields for the server (e.g. ``{"chat_template_kwargs": {...}}``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        tool_choice: Literal["auto", "required", "none"] = "auto",
        context_mode: Literal["system", "none"] = "system",
        timeout_s: float = 120.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        check_choice("context_mode", context_mode, ("system", "none"))
        # Retries belong to the executor's policy, so the client itself makes one attempt.
        endpoint = Endpoint(base_url, model, api_key_env, timeout_s=timeout_s, max_retries=0)
        self._client = openai_sdk_client(endpoint, api_key, where="OpenAIChatAgent api_key_env")
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.tool_choice, self.context_mode = tool_choice, context_mode
        self.extra_body = dict(extra_body or {})

    def build_messages(self, request: ReplayRequest) -> list[dict[str, Any]]:
        return request_messages(request, self.context_mode)

    async def decide(self, request: ReplayRequest) -> AgentDecision:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self.build_messages(request),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "n": 1,
        }
        if request.tools:
            kwargs["tools"] = request.to_openai()["tools"]
            kwargs["tool_choice"] = self.tool_choice
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        try:
            response = await self._client.chat.completions.create(**kwargs)
        except openai.APIError as err:
            raise AgentTransportFailure(
                f"agent {self.model!r} request {request.id!r} failed: {type(err).__name__}: {err}"
            ) from err
        if not response.choices:
            raise AgentTransportFailure(f"agent {self.model!r} request {request.id!r}: response has no choices")
        return decision_from_message(response.choices[0].message.model_dump(exclude_none=True))

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> OpenAIChatAgent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
