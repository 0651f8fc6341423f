"""Reward statistics over scored trials as a torchmetric (mean, std, min, max, count)."""

from __future__ import annotations

import torch
from torchmetrics import Metric


class RewardStats(Metric):
    """Running mean / population std / min / max / count of rewards.

    ``update(rewards, valid=None)``: ``rewards`` float of any shape; ``valid`` bool of the same shape
    selects the scored entries. ``compute()`` returns a dict of float64 scalars (NaN when empty).
    """

    full_state_update = False
    is_differentiable = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        f64 = torch.float64
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("sum", default=torch.tensor(0.0, dtype=f64), dist_reduce_fx="sum")
        self.add_state("sum_sq", default=torch.tensor(0.0, dtype=f64), dist_reduce_fx="sum")
        self.add_state("min", default=torch.tensor(float("inf"), dtype=f64), dist_reduce_fx="min")
        self.add_state("max", default=torch.tensor(float("-inf"), dtype=f64), dist_reduce_fx="max")

    def update(self, rewards: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        values = rewards.to(torch.float64)
        if valid is not None:
            if valid.shape != rewards.shape:
                raise ValueError(f"valid mask shape {tuple(valid.shape)} differs from rewards {tuple(rewards.shape)}")
            values = values[valid.bool()]
        values = values.reshape(-1)
        if values.numel() == 0:
            return
        if not torch.isfinite(values).all():
            raise ValueError("RewardStats: rewards must be finite")
        self.count += values.numel()
        self.sum += values.sum()
        self.sum_sq += (values * values).sum()
        self.min = torch.minimum(self.min, values.min())
        self.max = torch.maximum(self.max, values.max())

    def compute(self) -> dict[str, torch.Tensor]:
        nan = torch.tensor(float("nan"), dtype=torch.float64)
        if self.count == 0:
            return {"mean": nan, "std": nan, "min": nan, "max": nan, "count": self.count.to(torch.float64)}
        mean = self.sum / self.count
        var = (self.sum_sq / self.count - mean * mean).clamp(min=0.0)
        return {
            "mean": mean,
            "std": var.sqrt(),
            "min": self.min,
            "max": self.max,
            "count": self.count.to(torch.float64),
        }
