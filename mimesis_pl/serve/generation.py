"""``ServedModel``: one export's tokenizer, template and :class:`HFEngine`, answering chat requests.

A request is rendered with the export's chat template (``tools`` and ``chat_template_kwargs`` as
template variables, as vLLM passes them), its ``n`` choices are submitted to the engine at once
(concurrent requests share its micro-batches), and each continuation is decoded and shaped
(:mod:`mimesis_pl.serve.shaping`). Every request gets explicit seeds, drawn from the server's own
``random.Random(seed)`` when the request has none, so serving never touches torch's global RNG.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..chat.chat_templates import load_tokenizer
from ..rollout.engines.base import GenerationResult, SamplingParams
from .requests import BadRequest, ChatRequest
from .revision import revision_of
from .settings import ServeSettings
from .shaping import cut_at_stop_strings, open_reasoning_tag, shape_choice

_SEED_SPACE = 2**62


@dataclass(frozen=True)
class Prompt:
    """A rendered request: its ids, and the think opener its generation prompt left open (if any)."""

    ids: list[int]
    open_tag: str | None


class ServedModel:
    """The model behind ``mimesis-pl serve``.

    Args:
        settings: what to serve.
        engine: the generator; ``None`` loads the export into an :class:`HFEngine` (its own copy of the
            weights). Tests pass a scripted engine (anything with ``async generate(ids, params)`` and ``close()``).
    """

    def __init__(self, settings: ServeSettings, *, engine: Any = None) -> None:
        self.settings = settings
        self.model_name = settings.model_name
        self.revision = revision_of(settings.model_dir)
        self.tokenizer = load_tokenizer(settings.model_dir, settings.chat_template)
        if not isinstance(getattr(self.tokenizer, "chat_template", None), str):
            raise ValueError(
                f"{settings.model_dir}: the tokenizer has no chat template; pass --chat-template "
                "(a shipped name or a .jinja path)"
            )
        config = json.loads((Path(settings.model_dir) / "config.json").read_text(encoding="utf-8"))
        self.max_model_len = settings.max_model_len or int(config.get("max_position_embeddings") or 4096)
        self.stop_ids = stop_ids_of(self.tokenizer, settings.model_dir)
        self.engine = engine if engine is not None else build_engine(settings, self.tokenizer)
        self._seeds = random.Random(settings.seed)

    def render(self, request: ChatRequest) -> Prompt:
        """The prompt ids of ``request``; a 400 when the template refuses it or it fills the context."""
        kwargs = {"tools": request.tools, **request.template_kwargs}
        try:
            head = self.tokenizer.apply_chat_template(request.messages, tokenize=False, **kwargs)
            text = self.tokenizer.apply_chat_template(
                request.messages, tokenize=False, add_generation_prompt=True, **kwargs
            )
        except Exception as err:  # a template's raise_exception, a missing variable
            raise BadRequest(f"the chat template cannot render these messages: {err}", "messages") from None
        tail = text[len(head) :] if text.startswith(head) else text
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if len(ids) >= self.max_model_len:
            raise BadRequest(
                f"the prompt is {len(ids)} tokens, but this model's maximum context length is "
                f"{self.max_model_len} tokens; shorten the messages",
                "messages",
            )
        return Prompt(ids, open_reasoning_tag(tail))

    def sampling(self, request: ChatRequest, prompt_len: int) -> list[SamplingParams]:
        """One :class:`SamplingParams` per choice: seed ``seed + i``, or drawn from the server's RNG."""
        room = self.max_model_len - prompt_len
        max_tokens = request.max_tokens if request.max_tokens is not None else room
        if max_tokens > room:
            raise BadRequest(
                f"max_tokens={max_tokens} with a {prompt_len}-token prompt exceeds this model's maximum context "
                f"length of {self.max_model_len} tokens; ask for at most {room}",
                "max_tokens",
            )
        seeds = [
            (request.seed + i) % _SEED_SPACE if request.seed is not None else self._seeds.randrange(_SEED_SPACE)
            for i in range(request.n)
        ]
        return [
            SamplingParams(
                max_new_tokens=max_tokens,
                temperature=request.temperature,
                top_p=request.top_p,
                top_k=request.top_k,
                stop_token_ids=() if request.ignore_eos else self.stop_ids,  # vLLM's ignore_eos: a fixed length
                seed=seed,
            )
            for seed in seeds
        ]

    async def complete(self, request: ChatRequest) -> dict[str, Any]:
        """The ``chat.completion`` JSON answering ``request``."""
        prompt = self.render(request)
        params = self.sampling(request, len(prompt.ids))
        results = await asyncio.gather(*(self.engine.generate(list(prompt.ids), p) for p in params))
        choices, completion_tokens = [], 0
        for index, result in enumerate(results):
            text, used, finish = self.decode(result, request.stop)
            completion_tokens += used
            choices.append(
                shape_choice(
                    text, index=index, finish_reason=finish, open_tag=prompt.open_tag, tools_offered=bool(request.tools)
                )
            )
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt.ids),
                "completion_tokens": completion_tokens,
                "total_tokens": len(prompt.ids) + completion_tokens,
            },
        }

    def decode(self, result: GenerationResult, stops: tuple[str, ...]) -> tuple[str, int, str]:
        """``(text, tokens counted, finish_reason)``: the stop id left out of the text, stop strings cut."""
        ids = list(result.token_ids)
        body = ids[:-1] if result.finish_reason == "stop" and ids and ids[-1] in self.stop_ids else ids
        text = self._text(body)
        cut, hit = cut_at_stop_strings(text, stops)
        if not hit:
            return text, len(ids), result.finish_reason
        return cut, self._ids_reaching(body, stops), "stop"

    def _text(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _ids_reaching(self, ids: list[int], stops: tuple[str, ...]) -> int:
        """The fewest leading ids whose text holds a stop string (what was generated up to the stop)."""
        low, high = 1, len(ids)
        while low < high:
            mid = (low + high) // 2
            if cut_at_stop_strings(self._text(ids[:mid]), stops)[1]:
                high = mid
            else:
                low = mid + 1
        return high

    def close(self) -> None:
        self.engine.close()


def stop_ids_of(tokenizer: Any, model_dir: str) -> tuple[int, ...]:
    """The ids that end a reply: the tokenizer's EOS and the export's ``generation_config.json`` EOS ids."""
    ids = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    config = Path(model_dir) / "generation_config.json"
    if config.is_file():
        eos = json.loads(config.read_text(encoding="utf-8")).get("eos_token_id")
        ids += eos if isinstance(eos, list) else [eos] if isinstance(eos, int) else []
    if not ids:
        raise ValueError(f"{model_dir}: no end-of-sequence id in the tokenizer or generation_config.json")
    return tuple(dict.fromkeys(int(i) for i in ids))


def build_engine(settings: ServeSettings, tokenizer: Any) -> Any:
    """The export loaded on ``settings.device`` in ``settings.dtype``, behind an :class:`HFEngine`."""
    import torch

    from ..causal_lm import load_causal_lm
    from ..rollout.engines.hf import HFEngine

    cuda = torch.cuda.is_available()
    if settings.device == "cuda" and not cuda:
        raise ValueError("ServeSettings.device='cuda' but torch sees no CUDA device; use device='cpu' or 'auto'")
    device = "cuda" if settings.device == "cuda" or (settings.device == "auto" and cuda) else "cpu"
    dtype = settings.dtype if settings.dtype != "auto" else ("bfloat16" if device == "cuda" else "float32")
    model = load_causal_lm(settings.model_dir, dtype=dtype).to(device)
    model.eval()
    model.requires_grad_(False)
    return HFEngine(model, tokenizer, max_batch_size=settings.max_batch_size, batch_wait_ms=settings.batch_wait_ms)
