"""A served chat simulator for SOUL: an OpenAI-compatible ``/v1/chat/completions`` model behind the rollout
engine interface, so the simulator-RL tasks run it unchanged (docs/decisions.md S73).

The tasks drive the simulator token-in/token-out with a bookkeeping tokenizer (``model_path``: a ChatML
tokenizer, as the reference's ``Qwen3-4B-Base``). This engine decodes the prompt ids back to the chat (ChatML
turns), sends the messages with the request's seed (the reference's ``EVAL_SEED``) and its token budget, and
encodes the reply with the same tokenizer. Unlike the reference, a reply that ended on its own is closed with
the end-of-turn id (the reference re-encoded without it, so every turn read as truncated); a reply cut by the
budget (``finish_reason: length``) stays open. Failures after the bounded retries raise
:class:`~mimesis_pl.failures.SimulatorFailure` (the row becomes ``task_error``, unscored and retried).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from mimesis_pl.failures import SimulatorFailure
from mimesis_pl.llm import ChatCompletionsClient, Endpoint, http_url
from mimesis_pl.llm.role_client import reply_text
from mimesis_pl.rollout.engines.base import GenerationResult, SamplingParams, check_prompt
from mimesis_pl.rollout.engines.settings import EngineSettings, EngineTarget

_TURN = re.compile(r"<\|im_start\|>(system|user|assistant|tool)\n(.*?)<\|im_end\|>", re.DOTALL)
_OPEN = re.compile(r"<\|im_start\|>assistant\n(?P<prefill>.*)\Z", re.DOTALL)


def chatml_messages(text: str) -> list[dict[str, str]]:
    """The chat of a rendered ChatML prompt that ends with an open assistant turn (a pre-filled empty
    reasoning block is dropped); anything else is a ``ValueError`` naming what it saw."""
    turns = [{"role": role, "content": content} for role, content in _TURN.findall(text)]
    rest = _TURN.sub("", text).lstrip()
    opened = _OPEN.search(rest)
    if not turns or opened is None or opened.group("prefill").strip() not in ("", "<think>\n\n</think>", "<think>"):
        raise ValueError(
            "the chat simulator engine needs a ChatML prompt ending with '<|im_start|>assistant\\n' (set "
            f"simulator.model_path to a ChatML tokenizer); got a prompt ending {text[-80:]!r}"
        )
    return turns


@dataclass
class ChatCompletionsEngineSettings(EngineSettings):
    """A served chat model as the SOUL simulator (``simulator.engine``).

    Args:
        base_url: the server root ending in ``/v1``.
        model: the served model name (the simulator's name in results unless ``simulator.name`` is set).
        api_key_env: environment variable holding the key (``None``: no auth header).
        send_sampling: send the simulator's temperature and top-p (``false``, the reference: the
            provider's defaults); the per-request seed and the token budget are always sent.
        enable_thinking: sent as ``chat_template_kwargs.enable_thinking`` (reference: ``false``).
        token_limit_field: the request field of the token budget: ``max_completion_tokens`` (the reference's;
            OpenAI's reasoning models accept only it) or ``max_tokens`` (older servers).
        reasoning_effort: sent unless ``None`` (reference: ``low``).
        timeout_s, max_retries, retry_backoff_s: per request (bounded, S29).
        extra_body: more request fields, sent as given.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    send_sampling: bool = False
    enable_thinking: bool | None = False
    token_limit_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    reasoning_effort: str | None = None
    timeout_s: float = 300.0
    max_retries: int = 9
    retry_backoff_s: float = 1.0
    extra_body: dict[str, Any] = field(default_factory=dict)

    #: A served model: its weights are not visible here, so the simulator must name its revision.
    served: ClassVar[bool] = True

    def __post_init__(self) -> None:
        http_url(self.base_url, "simulator.engine.base_url")

    def endpoint(self) -> Endpoint:
        """Where the simulator's requests go (:class:`~mimesis_pl.llm.Endpoint`)."""
        return Endpoint.of(self, self.base_url)

    def build(self, target: EngineTarget) -> ChatCompletionsEngine:
        if target.tokenizer is None:
            raise ValueError("ChatCompletionsEngineSettings needs the bookkeeping tokenizer (simulator.model_path)")
        return ChatCompletionsEngine(self, target.tokenizer)


class ChatCompletionsEngine:
    """The rollout-engine face of a served chat model (see the module docstring)."""

    def __init__(self, settings: ChatCompletionsEngineSettings, tokenizer: Any) -> None:
        self.settings, self.tokenizer = settings, tokenizer
        self.eot_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
        if self.eot_id is None or self.eot_id == getattr(tokenizer, "unk_token_id", None):
            raise ValueError("the chat simulator engine needs a ChatML tokenizer (no '<|im_end|>' token)")
        self.client = ChatCompletionsClient(settings.endpoint(), SimulatorFailure)
        self.requests: list[dict[str, Any]] = []

    def body(self, messages: list[dict[str, str]], params: SamplingParams) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": messages, s.token_limit_field: params.max_new_tokens}
        if params.seed is not None:
            body["seed"] = params.seed
        if s.send_sampling:
            body.update(temperature=params.temperature, top_p=params.top_p)
        if s.enable_thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": s.enable_thinking}
        if s.reasoning_effort not in (None, "none"):
            body["reasoning_effort"] = s.reasoning_effort
        return {**body, **s.extra_body}

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        text = self.tokenizer.decode(check_prompt(prompt_ids), skip_special_tokens=False)
        body = self.body(chatml_messages(text), params)
        self.requests.append(body)
        who = f"simulator ({self.settings.model})"

        def read(payload: Mapping[str, Any]) -> tuple[str, str]:
            reply = reply_text(payload, who, keep_reasoning=True)
            return reply, str(payload["choices"][0].get("finish_reason") or "stop")

        reply, finish = await self.client.call(body, read, what=who)
        ids = self.tokenizer(reply, add_special_tokens=False)["input_ids"][: params.max_new_tokens]
        if finish == "length" or len(ids) >= params.max_new_tokens:
            return GenerationResult(token_ids=ids, logprobs=None, finish_reason="length")
        return GenerationResult(token_ids=[*ids, self.eot_id], logprobs=None, finish_reason="stop")

    def update_weights(self, source: Any) -> None:
        raise NotImplementedError("a served chat simulator is frozen")

    def sleep(self) -> None:
        return None

    def wake_up(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        await self.client.aclose()
