"""An in-process (or token-level served) engine as the agent under test of replay.

The request's messages and tools are rendered with the policy's own chat template — the same
renderer training and episodes use, so replay asks the model exactly what it was trained to answer
— then one greedy generation is decoded and read as a decision (``<think>`` set aside, ``<tool_call>``
blocks parsed). Exactly one ``engine.generate`` call per request: the executor's retry policy is the
only thing that may repeat it, and only after an infrastructure failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.eval.replay.agent import AgentDecision, decision_from_text
from mimesis_pl.eval.replay.openai_agent import request_messages
from mimesis_pl.eval.replay.plan import ReplayRequest
from mimesis_pl.failures import AgentTransportFailure
from mimesis_pl.rollout.engines import OpenAIEngineError, RolloutEngine, SamplingParams


class EngineChatAgent:
    """A :class:`~mimesis_pl.eval.replay.agent.ChatAgent` backed by a :class:`RolloutEngine`.

    Args:
        engine: token-in/token-out generator (``HFEngine``, ``VLLMEngine``, ``SGLangEngine``,
            ``OpenAIEngine``).
        tokenizer: the agent's tokenizer; its chat template renders the request and its
            ``eos_token_id`` (end of turn) stops generation.
        max_new_tokens: completion budget per decision.
        context_mode: ``"system"`` shows the request context as a system message (as
            :class:`~mimesis_pl.eval.replay.OpenAIChatAgent` does), ``"none"`` leaves it out.
        template_kwargs: chat-template variables (e.g. ``enable_thinking``).
        max_prompt_tokens: a request whose rendered prompt is longer raises ``ValueError`` naming it
            (``None``: no check; the engine's own limit applies).

    Sampling is greedy (temperature 0): replay measures one decision per request, deterministically.
    ``calls`` counts ``engine.generate`` calls, so tests and artifacts can check "one call per request".
    """

    def __init__(
        self,
        engine: RolloutEngine,
        tokenizer: Any,
        max_new_tokens: int = 1024,
        context_mode: Literal["system", "none"] = "system",
        template_kwargs: Mapping[str, Any] | None = None,
        max_prompt_tokens: int | None = None,
    ) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("EngineChatAgent: the tokenizer has no eos_token_id to stop a turn on")
        self.engine = engine
        self.tokenizer = tokenizer
        self.context_mode = context_mode
        self.template_kwargs = dict(template_kwargs or {})
        self.max_prompt_tokens = max_prompt_tokens
        self.sampling = SamplingParams(
            max_new_tokens=max_new_tokens, temperature=0.0, stop_token_ids=(tokenizer.eos_token_id,)
        )
        self.calls = 0
        self._renderers: dict[str, ChatRenderer] = {}

    def _renderer(self, tools: list[dict[str, Any]]) -> ChatRenderer:
        # Cases share a handful of tool sets; the renderer probes the template once per set.
        key = json.dumps(tools, sort_keys=True)
        if key not in self._renderers:
            self._renderers[key] = ChatRenderer(self.tokenizer, tools=tools or None, **self.template_kwargs)
        return self._renderers[key]

    def prompt_ids(self, request: ReplayRequest) -> list[int]:
        """The token ids the engine receives for ``request`` (messages + tools + generation prompt)."""
        tools = request.to_openai()["tools"]
        ids = self._renderer(tools).prompt_ids(request_messages(request, self.context_mode), sample=request.id)
        if self.max_prompt_tokens is not None and len(ids) > self.max_prompt_tokens:
            raise ValueError(
                f"replay request {request.id!r} renders to {len(ids)} tokens, more than "
                f"max_prompt_tokens={self.max_prompt_tokens}"
            )
        return ids

    async def decide(self, request: ReplayRequest) -> AgentDecision:
        ids = self.prompt_ids(request)
        self.calls += 1
        try:
            result = await self.engine.generate(ids, self.sampling)
        except OpenAIEngineError as err:  # a served engine that is down is not a wrong decision
            raise AgentTransportFailure(f"engine failed on replay request {request.id!r}: {err}") from err
        body = result.token_ids
        if result.finish_reason == "stop" and body:
            body = body[:-1]  # the end-of-turn id is not part of the reply
        return decision_from_text(self.tokenizer.decode(body, skip_special_tokens=False))
