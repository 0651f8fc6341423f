"""The engine contract of the rollout: token ids in, token ids and log-probs out.

Every engine (HF in-process, vLLM, SGLang, an OpenAI-compatible server) implements
:class:`RolloutEngine`. The multi-turn loop never sees text from an engine: it appends the sampled
ids exactly as generated, so what the policy is trained on is what it produced.

Stop semantics are the same for every engine and explicit: generation ends at the first sampled id
in ``SamplingParams.stop_token_ids`` (the id is kept in the output) or after ``max_new_tokens``.
The model's own EOS is *not* an implicit stop; pass it in ``stop_token_ids`` (the usual value is
``(tokenizer.eos_token_id,)``, ``<|im_end|>`` for ChatML models).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, runtime_checkable

import torch

from ...checks import check_choice

FinishReason = Literal["stop", "length"]

# One per-turn budget of the agent for training rollouts, RL validation and evaluation (the reference
# trains with 8192 and evaluates with 2048, a mismatch: docs/decisions.md A24b). A config may set its own.
AGENT_TURN_TOKENS = 8192


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one continuation.

    Args:
        max_new_tokens: upper bound on generated ids (the stop id counts).
        temperature: softmax temperature; ``0`` means greedy (arg-max).
        top_p: nucleus mass kept, in ``(0, 1]``; ``1`` keeps everything.
        top_k: keep the ``k`` most likely ids; ``-1`` turns it off.
        stop_token_ids: ids that end generation; the stop id is returned as the last id.
        seed: per-request seed; the same seed, prompt and weights give the same ids.
            ``None`` draws one (engines that run in-process draw it from torch's global RNG,
            so a run seeded with ``lightning.seed_everything`` is reproducible).
    """

    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        # Lists arrive from YAML and JSON; keep the dataclass hashable so engines can group by it.
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"SamplingParams.max_new_tokens must be an int >= 1, got {self.max_new_tokens!r}")
        if self.temperature < 0:
            raise ValueError(f"SamplingParams.temperature must be >= 0 (0 = greedy), got {self.temperature!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p!r}")
        if self.top_k != -1 and self.top_k < 1:
            raise ValueError(f"SamplingParams.top_k must be -1 (off) or >= 1, got {self.top_k!r}")
        if any(t < 0 for t in self.stop_token_ids):
            raise ValueError(f"SamplingParams.stop_token_ids must be non-negative ids, got {self.stop_token_ids}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass
class GenerationResult:
    """One sampled continuation.

    ``token_ids`` are exactly the sampled ids, the stop id included when generation stopped on
    one. ``logprobs[i]`` is ``log p(token_ids[i] | prompt, token_ids[:i])`` under the model's raw
    distribution (no temperature, top-p or top-k), or ``None`` when the engine cannot provide it.
    """

    token_ids: list[int]
    logprobs: list[float] | None
    finish_reason: FinishReason

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.token_ids):
            raise ValueError(f"GenerationResult: {len(self.logprobs)} logprobs for {len(self.token_ids)} token ids")
        check_choice("GenerationResult.finish_reason", self.finish_reason, ("stop", "length"))


@runtime_checkable
class RolloutEngine(Protocol):
    """What the multi-turn loop needs from a generator.

    ``generate`` handles one sequence; engines batch concurrent calls themselves, so the loop
    simply runs one coroutine per trajectory. ``update_weights`` makes later generations use new
    weights (what a ``source`` may be differs per engine and is documented on each class);
    ``sleep``/``wake_up`` release and reacquire accelerator memory around the training step where
    the engine supports it and are no-ops otherwise; ``close`` frees everything.
    """

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult: ...

    def update_weights(self, source: Any) -> None: ...

    def sleep(self) -> None: ...

    def wake_up(self) -> None: ...

    def close(self) -> None: ...


def cut_at_stop(token_ids: Iterable[int], params: SamplingParams) -> tuple[list[int], FinishReason]:
    """Keep ids up to and including the first stop id, at most ``max_new_tokens`` of them.

    A continuation whose last allowed id is a stop id finished on the stop, not on the length.
    """
    stops = set(params.stop_token_ids)
    kept: list[int] = []
    for token in token_ids:
        if len(kept) == params.max_new_tokens:
            break
        kept.append(int(token))
        if token in stops:
            return kept, "stop"
    return kept, "length"


def check_prompt(prompt_ids: Any) -> list[int]:
    """A non-empty list of non-negative ints, or a ``ValueError`` naming what is wrong."""
    if isinstance(prompt_ids, (str, bytes)) or not hasattr(prompt_ids, "__len__"):
        raise ValueError(f"prompt_ids must be a list of token ids, got {type(prompt_ids).__name__}")
    ids = [int(t) for t in prompt_ids]
    if not ids:
        raise ValueError("prompt_ids is empty; an engine needs at least one prompt token")
    if min(ids) < 0:
        raise ValueError(f"prompt_ids holds a negative id ({min(ids)})")
    return ids


def with_drawn_seed(params: SamplingParams) -> SamplingParams:
    """``params`` with a seed drawn from torch's global RNG when it has none.

    In-process engines call this in ``generate``, in call order on the event loop, so a run seeded
    with ``lightning.seed_everything`` samples the same ids again.
    """
    if params.seed is not None:
        return params
    return replace(params, seed=int(torch.randint(0, 2**62, ()).item()))
