"""The placebo pool of CSD: earlier coaching notes, drawn as content-free controls.

Inserting *any* user turn shifts the teacher's log-probs; scoring the same tokens under a note written
for another situation measures that shift, and CSD subtracts it. The reference drew placebos from any
other note — possibly the same trajectory, a sibling rollout of the same task, or validation — so the
"control" could carry the same information (docs/decisions.md A6). Here a draw for a note of group ``g`` on
task ``k`` only comes from notes of *other* groups *and* other tasks, made during training.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor


@dataclass(frozen=True)
class PooledNote:
    note: str
    group_id: str
    task_key: str


class PlaceboPool:
    """A bounded FIFO of training notes with independent draws.

    Args:
        capacity: notes kept (oldest dropped first); reference 256.
        min_size: below this many notes no placebo is drawn (the raw signal is used); reference 8.
        seed: draw seed (the RNG state is checkpointed with the pool).
    """

    def __init__(self, capacity: int = 256, min_size: int = 8, seed: int = 0) -> None:
        if capacity < 1 or min_size < 1:
            raise ValueError(f"capacity and min_size must be >= 1, got {capacity}, {min_size}")
        self.capacity = capacity
        self.min_size = min_size
        self._notes: deque[PooledNote] = deque(maxlen=capacity)
        self._rng = random.Random(seed)

    def __len__(self) -> int:
        return len(self._notes)

    def add(self, note: str, group_id: str, task_key: str) -> None:
        if note:
            self._notes.append(PooledNote(note, group_id, task_key))

    def draw(self, note: str, group_id: str, task_key: str) -> str | None:
        """A placebo for ``note``: another group's, another task's, different text; ``None`` if none."""
        if len(self._notes) < self.min_size:
            return None
        candidates = [
            p.note for p in self._notes if p.group_id != group_id and p.task_key != task_key and p.note != note
        ]
        return self._rng.choice(candidates) if candidates else None

    def state_dict(self) -> dict[str, Any]:
        return {
            "notes": [(p.note, p.group_id, p.task_key) for p in self._notes],
            "rng": self._rng.getstate(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._notes = deque((PooledNote(*n) for n in state["notes"]), maxlen=self.capacity)
        rng_state = state["rng"]
        # The state round-trips through torch.save as nested lists; random wants tuples.
        self._rng.setstate((rng_state[0], tuple(rng_state[1]), rng_state[2]))


def and_mask_placebo(mask: Tensor, placebo_logprobs: Tensor) -> Tensor:
    """The reference's placebo rule: inside a trajectory that has placebo rows, keep only the coached
    tokens that have a placebo (``real AND placebo``); a trajectory without any placebo keeps its raw
    tokens (docs/decisions.md A62).

    Args:
        mask: ``[B, T]`` bool, the coached tokens.
        placebo_logprobs: ``[B, T]``, NaN where a token has no placebo row.

    Returns:
        ``[B, T]`` bool: ``mask`` with the placebo-less tokens of placebo-carrying trajectories removed.
    """
    if mask.shape != placebo_logprobs.shape:
        raise ValueError(f"mask {tuple(mask.shape)} and placebo_logprobs {tuple(placebo_logprobs.shape)} differ")
    has_placebo = ~torch.isnan(placebo_logprobs)
    carries = (mask & has_placebo).any(dim=1, keepdim=True)
    return mask & (has_placebo | ~carries)
