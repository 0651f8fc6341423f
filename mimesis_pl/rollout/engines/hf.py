"""``HFEngine``: HF ``generate`` on the training module's own weights, micro-batched.

The embedded default: no second copy of the weights, no weight sync, runs anywhere torch runs.
It is the slowest engine on a GPU (static batches, no paged KV cache); use vLLM or SGLang there.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

from ...causal_lm import eval_mode
from ...chat import pad_id_of
from .base import GenerationResult, SamplingParams, check_prompt, cut_at_stop, with_drawn_seed
from .batching import MicroBatcher
from .hf_rows import RowSampler, RowStops
from .weights import hf_state_dict


class HFEngine:
    """Generate with a Hugging Face causal LM in this process.

    Args:
        model: a ``transformers`` causal LM (or a PEFT model around one): the training module's
            own model object, so generation always uses the current weights.
        tokenizer_or_pad_id: a tokenizer (its ``pad_token_id``, else ``eos_token_id``, is used) or
            the pad id itself. Pads only fill the left of shorter prompts and are masked out.
        max_batch_size: most sequences in one ``generate`` call.
        batch_wait_ms: how long a request arriving at an idle engine waits for others to batch with.

    Concurrent :meth:`generate` calls are left-padded into one ``[B, P]`` batch with a ``[B, P]``
    attention mask and run by one ``model.generate`` in a worker thread. Each row keeps its own
    temperature, top-p, top-k, seed, stop ids and length (see ``hf_rows``), so a request's ids do
    not depend on the other requests in its batch (up to float rounding of padded attention).
    During generation the model is in eval mode under ``torch.no_grad()``; every submodule's
    previous train/eval flag is restored afterwards. Logprobs are taken from the raw logits.

    ``update_weights(source)``: a no-op when ``source`` is the wrapped model or a module that
    contains it (the LightningModule); otherwise ``source`` (a module or state dict with the same
    names) is copied *into* the wrapped model with ``load_state_dict(strict=True)``.
    ``sleep``/``wake_up`` are no-ops: the weights belong to training.

    Rollouts must not overlap a training step: they share the parameters.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer_or_pad_id: Any,
        max_batch_size: int = 64,
        batch_wait_ms: float = 2.0,
    ) -> None:
        if not hasattr(model, "generate"):
            raise TypeError(
                f"HFEngine needs a model with .generate (a transformers causal LM), got {type(model).__name__}"
            )
        self.model = model
        self.pad_id = pad_id_of(tokenizer_or_pad_id)
        self._lock = threading.Lock()  # one generate at a time, and no weight copy during one
        self._batcher = MicroBatcher(self._generate_batch, max_batch_size=max_batch_size, batch_wait_ms=batch_wait_ms)

    @property
    def batches_run(self) -> int:
        """``model.generate`` calls made so far (one per micro-batch)."""
        return self._batcher.batches_run

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        return await self._batcher.submit(check_prompt(prompt_ids), with_drawn_seed(params))

    def update_weights(self, source: Any) -> None:
        if isinstance(source, nn.Module) and any(m is self.model for m in source.modules()):
            return
        state = hf_state_dict(source)
        with self._lock, torch.no_grad():
            self.model.load_state_dict(state, strict=True)

    def sleep(self) -> None:
        pass

    def wake_up(self) -> None:
        pass

    def close(self) -> None:
        self._batcher.close()

    def _generate_batch(self, requests: Sequence[tuple[list[int], SamplingParams]]) -> list[GenerationResult]:
        params = [p for _, p in requests]
        device = _device_of(self.model)
        prompt_len = max(len(ids) for ids, _ in requests)
        input_ids = torch.full((len(requests), prompt_len), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(requests), prompt_len), dtype=torch.long)
        for row, (ids, _) in enumerate(requests):
            input_ids[row, prompt_len - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, prompt_len - len(ids) :] = 1
        sampler = RowSampler(params, device)
        stops = RowStops(params, prompt_len, device)
        with self._lock, torch.no_grad(), eval_mode(self.model):
            sequences = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                generation_config=_greedy_config(max(p.max_new_tokens for p in params), self.pad_id),
                logits_processor=LogitsProcessorList([sampler]),
                stopping_criteria=StoppingCriteriaList([stops]),
            )
        new_ids = sequences[:, prompt_len:].cpu()
        logprobs = sampler.logprobs()
        results = []
        for row, p in enumerate(params):
            token_ids, reason = cut_at_stop(new_ids[row].tolist(), p)
            results.append(GenerationResult(token_ids, logprobs[row, : len(token_ids)].tolist(), reason))
        return results


def _greedy_config(max_new_tokens: int, pad_id: int) -> GenerationConfig:
    # Greedy, because RowSampler already chose each token; every field that would add a logits
    # processor in front of RowSampler is set to its neutral value, since unset (None) fields are
    # filled from the model's generation_config and logprobs must come from the raw logits.
    # eos_token_id=[]: stopping is RowStops' job (the model's EOS is not an implicit stop).
    return GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        num_beams=1,
        eos_token_id=[],
        pad_token_id=pad_id,
        min_new_tokens=0,
        repetition_penalty=1.0,
        no_repeat_ngram_size=0,
        renormalize_logits=False,
        use_cache=True,
    )


def _device_of(model: nn.Module) -> torch.device:
    for parameter in model.parameters():
        return parameter.device
    return torch.device("cpu")
