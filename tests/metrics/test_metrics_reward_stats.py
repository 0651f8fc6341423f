"""RewardStats: mean / population std / min / max over scored rewards."""

from __future__ import annotations

import math

import pytest
import torch

from mimesis_pl.metrics import RewardStats


def test_hand_worked_stats_with_mask_and_batches() -> None:
    metric = RewardStats()
    metric.update(torch.tensor([0.0, 1.0, 99.0]), torch.tensor([True, True, False]))
    metric.update(torch.tensor([[1.0, 2.0]]))
    out = metric.compute()
    assert out["mean"].item() == 1.0 and out["count"].item() == 4
    assert out["std"].item() == pytest.approx(math.sqrt(0.5))  # deviations -1, 0, 0, 1
    assert (out["min"].item(), out["max"].item()) == (0.0, 2.0)


def test_empty_and_invalid_inputs() -> None:
    metric = RewardStats()
    metric.update(torch.tensor([1.0]), torch.tensor([False]))
    assert math.isnan(metric.compute()["mean"].item())
    with pytest.raises(ValueError, match="finite"):
        metric.update(torch.tensor([float("nan")]))
    with pytest.raises(ValueError, match="mask shape"):
        metric.update(torch.tensor([1.0, 2.0]), torch.tensor([True]))
