"""The torchmetrics of one gym's evaluation: pass@k and pass^k for every k, avg@n, reward statistics.

They are fed the ``[tasks, trials]`` matrices of :func:`~mimesis_pl.eval.trials.trial_matrix` batch
by batch; unscored trials are masked out (``valid``), so they count neither as failures nor as zeros.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from mimesis_pl.metrics import AvgAtN, PassAtK, PassHatK, RewardStats


class GymMetrics(nn.Module):
    """``update(matrix)`` per batch of tasks, ``compute()`` -> flat ``{"pass@1": v, ...}`` (NaN left out).

    Args:
        ks: the k of pass@k / pass^k.
    """

    def __init__(self, ks: Sequence[int]) -> None:
        super().__init__()
        self.ks = tuple(ks)
        self.pass_at = nn.ModuleDict({str(k): PassAtK(k) for k in self.ks})
        self.pass_hat = nn.ModuleDict({str(k): PassHatK(k) for k in self.ks})
        self.avg = AvgAtN()
        self.rewards = RewardStats()
        self.trials = 0
        self.unscored = 0

    def update(self, matrix: Mapping[str, Any]) -> None:
        """``matrix``: ``correct``/``valid`` bool ``[B, N]``, ``scores``/``rewards`` float64 ``[B, N]``."""
        correct, valid = matrix["correct"], matrix["valid"]
        if correct.numel() == 0:
            return
        for k in self.ks:
            self.pass_at[str(k)].update(correct, valid)
            self.pass_hat[str(k)].update(correct, valid)
        self.avg.update(matrix["scores"], valid)
        self.rewards.update(matrix["rewards"], valid)

    def count(self, trials: int, unscored: int) -> None:
        """Add trial counts (the matrices do not tell unscored from missing trials)."""
        self.trials += trials
        self.unscored += unscored

    def compute(self) -> dict[str, float]:
        values: dict[str, torch.Tensor | float] = {"avg@n": self.avg.compute()}
        values.update({f"pass@{k}": self.pass_at[str(k)].compute() for k in self.ks})
        values.update({f"pass^{k}": self.pass_hat[str(k)].compute() for k in self.ks})
        stats = self.rewards.compute()
        values.update({"reward_mean": stats["mean"], "reward_std": stats["std"], "scored_trials": stats["count"]})
        values.update({"trials": float(self.trials), "unscored_trials": float(self.unscored)})
        out = {name: float(v) for name, v in values.items()}
        return {name: v for name, v in out.items() if not math.isnan(v)}
