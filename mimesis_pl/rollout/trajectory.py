"""``Trajectory``: the one data structure of RL — token ids exactly as sampled plus their bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..spans import TurnSpan

#: Statuses that mean the infrastructure failed, not the policy: masked out of the loss by default.
FAILURE_STATUSES = frozenset({"env_error", "user_error", "timeout", "judge_error"})


@dataclass
class Trajectory:
    """One multi-turn rollout.

    ``input_ids``: prompt, then alternating assistant spans (sampled ids, unchanged) and
    environment/tool spans (rendered deltas of the new messages). ``response_mask[i] = 1`` exactly
    on ids the policy generated. ``turn_spans[t]`` locates assistant turn ``t``: its header
    (``header_start``), its sampled ids ``[start, end)``. ``rollout_logprobs[i]`` is the engine's
    log-prob of id ``i`` on generated ids (0 elsewhere), or ``None`` when the engine gives none.
    ``privileged`` holds the simulator's hidden side per turn (never rendered into ``input_ids``).
    ``status`` is the episode's termination (``finished``, ``max_turns``, ``truncated``,
    ``env_error``, ``user_error``, ``timeout``, ``aborted``), kept apart from the reward.
    ``turn_versions[t]``: the RL step whose weights the engine held when turn ``t``'s episode started sampling
    (``rollout.max_staleness >= 1``; a lower bound when weights changed mid-episode), ``None`` otherwise.
    """

    input_ids: list[int]
    response_mask: list[int]
    prompt_length: int
    turn_spans: list[TurnSpan]
    turn_rewards: list[float]
    group_id: str
    gen_uid: str
    episode_id: str
    status: str
    rollout_logprobs: list[float] | None = None
    reward: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)
    privileged: list[Any] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    data_source: str = ""
    task_key: str = ""
    counters: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    turn_versions: list[int] | None = None

    def __post_init__(self) -> None:
        if len(self.response_mask) != len(self.input_ids):
            raise ValueError(f"response_mask has {len(self.response_mask)} entries for {len(self.input_ids)} ids")
        if self.rollout_logprobs is not None and len(self.rollout_logprobs) != len(self.input_ids):
            raise ValueError(f"rollout_logprobs has {len(self.rollout_logprobs)} entries for {len(self.input_ids)} ids")

    @property
    def num_turns(self) -> int:
        return len(self.turn_spans)

    @property
    def response_length(self) -> int:
        return sum(self.response_mask)

    @property
    def failed(self) -> bool:
        return self.status in FAILURE_STATUSES

    def turn_index(self) -> list[int]:
        """For every id, the assistant turn it belongs to (−1 outside generated ids)."""
        index = [-1] * len(self.input_ids)
        for t, span in enumerate(self.turn_spans):
            index[span.start : span.end] = [t] * (span.end - span.start)
        return index


def collate_trajectories(trajectories: list[Trajectory], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded training tensors of a list of trajectories.

    Returns ``input_ids``, ``attention_mask``, ``response_mask``, ``turn_index`` (−1 padded) as
    ``[B, L]`` long tensors and ``rollout_logprobs [B, L]`` float32 (0 where unknown).
    """
    width = max(len(t.input_ids) for t in trajectories)
    batch = len(trajectories)
    out = {
        "input_ids": torch.full((batch, width), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros((batch, width), dtype=torch.long),
        "response_mask": torch.zeros((batch, width), dtype=torch.long),
        "turn_index": torch.full((batch, width), -1, dtype=torch.long),
        "rollout_logprobs": torch.zeros((batch, width), dtype=torch.float32),
    }
    for row, t in enumerate(trajectories):
        n = len(t.input_ids)
        out["input_ids"][row, :n] = torch.tensor(t.input_ids)
        out["attention_mask"][row, :n] = 1
        out["response_mask"][row, :n] = torch.tensor(t.response_mask)
        out["turn_index"][row, :n] = torch.tensor(t.turn_index())
        if t.rollout_logprobs is not None:
            out["rollout_logprobs"][row, :n] = torch.tensor(t.rollout_logprobs)
    return out
