"""Typed inputs at the policy update's boundary (no Lightning): the trained rows, and what the loss reads of them.

:class:`PolicyBatch` is what an RL module hands its PPO update: one rank's collated trained trajectories with
their advantages. :class:`LossInputs` is what every micro-batch's loss reads, aligned with the student's
log-probs (column ``j`` scores token ``j + 1``). Both replace string-keyed tensor dicts; the update returns its
figures (:class:`PolicyUpdate`, :class:`UpdateResult`) instead of filling a caller's dict (docs/decisions.md D14).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import Tensor

#: The tensors a policy batch needs from the collated experience.
BATCH_FIELDS = ("input_ids", "attention_mask", "response_mask", "rollout_logprobs", "advantages")


@dataclass(frozen=True)
class PolicyBatch:
    """One rank's trained trajectories: row ``k`` is slot ``trained[k]`` of the ``n_slots`` it rolled out.

    Args:
        input_ids: ``[B, T]`` long, right-padded token ids.
        attention_mask: ``[B, T]`` long, 1 on real tokens.
        response_mask: ``[B, T]`` long, 1 on generated (trained) tokens.
        rollout_logprobs: ``[B, T]`` float32, the engine's log-probs of the ids (0 where unknown).
        advantages: ``[B, T]`` float32, per-token advantages.
        trained: for each row, its slot among the rank's rollouts.
        n_slots: the rank's rollouts, trained or not (fixes the mini-batch plan under data parallelism).
    """

    input_ids: Tensor
    attention_mask: Tensor
    response_mask: Tensor
    rollout_logprobs: Tensor
    advantages: Tensor
    trained: tuple[int, ...]
    n_slots: int

    def __post_init__(self) -> None:
        if len(self.trained) != self.input_ids.shape[0]:
            raise ValueError(f"PolicyBatch: {len(self.trained)} trained slots for {self.input_ids.shape[0]} rows")
        for name in BATCH_FIELDS[1:]:
            shape = getattr(self, name).shape
            if shape != self.input_ids.shape:
                raise ValueError(f"PolicyBatch.{name} is {tuple(shape)}, input_ids {tuple(self.input_ids.shape)}")

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, Tensor], *, trained: list[int], n_slots: int) -> PolicyBatch:
        """From ``collate_trajectories`` output plus ``advantages``; ``tensors`` may be empty when nothing trains."""
        if not trained:
            empty = torch.zeros(0, 2)
            return cls(empty.long(), empty.long(), empty.long(), empty, empty, (), n_slots)
        missing = [name for name in BATCH_FIELDS if name not in tensors]
        if missing:
            raise ValueError(f"the experience's tensors lack {missing} (have {sorted(tensors)})")
        return cls(**{name: tensors[name] for name in BATCH_FIELDS}, trained=tuple(trained), n_slots=n_slots)

    @property
    def size(self) -> int:
        """Rows on this rank."""
        return len(self.trained)


@dataclass(frozen=True)
class LossInputs:
    """What the clipped policy loss (and an extra term) reads, in the student's log-prob columns.

    Args:
        batch: the rows the student's forward reads (ids and masks).
        response_mask: ``[B, T-1]`` float, 1 where column ``j``'s token ``j + 1`` is trained.
        advantages: ``[B, T-1]`` float, the advantage of token ``j + 1``.
        old_logprobs: ``[B, T-1]`` float, log-probs under the sampling policy; ``None``: on-policy (each
            micro-batch's own log-probs, detached, are the old ones).
    """

    batch: PolicyBatch
    response_mask: Tensor
    advantages: Tensor
    old_logprobs: Tensor | None


@dataclass
class UpdateResult:
    """What one RL step's update returns.

    Args:
        trained: ``False`` when no rank had a trajectory to train on (no optimiser step ran).
        metrics: the update's figures (``train/*``, ``time/*``, and the extra term's).
    """

    trained: bool
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class PolicyUpdate:
    """What the PPO passes return: the old log-probs they used (``[B, T-1]``) and their metrics."""

    old_logprobs: torch.Tensor
    metrics: dict[str, float]
