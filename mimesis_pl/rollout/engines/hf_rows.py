"""Per-row sampling and stopping for one HF ``generate`` call over a micro-batch.

HF ``generate`` takes one sampling configuration and one global RNG for the whole batch. A
rollout batch mixes requests with different temperatures, seeds, stop ids and lengths, and a
request's ids must not depend on which other requests shared its batch. So the engine runs
``generate`` greedily and plugs in two small hooks:

- :class:`RowSampler` (a ``LogitsProcessor``) sees the raw next-token logits ``[B, V]``, picks
  each row's token with that row's temperature/top-k/top-p and its own seeded generator, records
  the raw log-prob of the pick, and returns scores whose arg-max is the pick. Recording the pick's
  log-prob here keeps ``O(B·T)`` floats instead of the ``O(B·T·V)`` that ``output_logits=True``
  holds (8k steps × 64 rows × a 152k vocabulary would not fit in memory).
- :class:`RowStops` (a ``StoppingCriteria``) marks a row done at its own stop ids or length, so
  the batch ends as soon as every row is done.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessor, StoppingCriteria

from .base import SamplingParams


class RowSampler(LogitsProcessor):
    """Choose the next token of every row and record its raw log-prob.

    Args:
        params: one :class:`SamplingParams` per row; ``seed`` must be set (the engine draws one
            when the request had none).
        device: where the logits live.

    After ``generate`` returns, :meth:`logprobs` is a ``[B, T]`` float32 CPU tensor: the raw
    log-prob of the token chosen at each step.
    """

    def __init__(self, params: Sequence[SamplingParams], device: torch.device) -> None:
        self.device = device
        # CPU generators: one uniform per row and step is cheap there, and a CUDA generator per
        # row would cost a kernel launch each.
        self.generators = [torch.Generator().manual_seed(int(p.seed)) for p in params]
        self.sample_rows = [i for i, p in enumerate(params) if not p.greedy]
        self._sample_index = torch.tensor(self.sample_rows, dtype=torch.long, device=device)
        sampled = [params[i] for i in self.sample_rows]
        self.temperature = torch.tensor([p.temperature for p in sampled], dtype=torch.float32, device=device)
        self.top_p = torch.tensor([p.top_p for p in sampled], dtype=torch.float32, device=device)
        self.top_k = torch.tensor([p.top_k for p in sampled], dtype=torch.long, device=device)
        self.truncates = any(p.top_p < 1.0 or p.top_k != -1 for p in sampled)
        self._steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        raw = scores.float()
        chosen = raw.argmax(dim=-1)
        if self.sample_rows:
            rows = self._sample_index
            chosen[rows] = self._sample(raw[rows] / self.temperature[:, None])
        self._steps.append(torch.log_softmax(raw, dim=-1).gather(1, chosen[:, None]).squeeze(1))
        forced = torch.full_like(scores, float("-inf"))
        return forced.scatter_(1, chosen[:, None], 0.0)

    def logprobs(self) -> torch.Tensor:
        if not self._steps:
            return torch.zeros(len(self.generators), 0)
        return torch.stack(self._steps, dim=1).cpu()

    def _sample(self, logits: torch.Tensor) -> torch.Tensor:
        """Inverse-CDF sampling, one uniform per row from that row's generator. ``logits`` is ``[R, V]``."""
        uniforms = torch.stack([torch.rand((), generator=self.generators[i]) for i in self.sample_rows])
        uniforms = uniforms.to(logits.device, torch.float64)
        if self.truncates:
            logits, order = logits.sort(dim=-1, descending=True)
            rank = torch.arange(logits.shape[-1], device=logits.device)
            k = torch.where(self.top_k > 0, self.top_k, logits.shape[-1])
            probs = torch.softmax(logits, dim=-1)
            mass_before = probs.cumsum(dim=-1) - probs
            # The most likely token is always kept, so top_p close to 0 means greedy, not empty.
            nucleus = (self.top_p[:, None] < 1.0) & (mass_before >= self.top_p[:, None]) & (rank[None, :] > 0)
            drop = (rank[None, :] >= k[:, None]) | nucleus
            logits = logits.masked_fill(drop, float("-inf"))
        probs = torch.softmax(logits, dim=-1, dtype=torch.float64)
        cdf = probs.cumsum(dim=-1)
        # right=True skips zero-probability ids (flat stretches of the CDF).
        picks = torch.searchsorted(cdf, (uniforms * cdf[:, -1])[:, None], right=True).clamp_(max=cdf.shape[-1] - 1)
        if self.truncates:
            picks = order.gather(1, picks)
        return picks.squeeze(1)


class RowStops(StoppingCriteria):
    """Mark a row finished at one of its stop ids or at its own ``max_new_tokens``.

    Args:
        params: one :class:`SamplingParams` per row.
        prompt_len: padded prompt length ``P``; ids past it are generated.
        device: where ``input_ids`` live.
    """

    def __init__(self, params: Sequence[SamplingParams], prompt_len: int, device: torch.device) -> None:
        self.prompt_len = prompt_len
        self.max_new = torch.tensor([p.max_new_tokens for p in params], dtype=torch.long, device=device)
        width = max([len(p.stop_token_ids) for p in params] + [1])
        stops = torch.full((len(params), width), -1, dtype=torch.long)
        for row, p in enumerate(params):
            stops[row, : len(p.stop_token_ids)] = torch.tensor(p.stop_token_ids, dtype=torch.long)
        self.stops = stops.to(device)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.BoolTensor:
        generated = input_ids.shape[1] - self.prompt_len
        hit_stop = (input_ids[:, -1:] == self.stops).any(dim=1)
        return hit_stop | (generated >= self.max_new)
