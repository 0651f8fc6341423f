"""torchmetrics for agent evaluation: :class:`PassAtK`, :class:`PassHatK`, :class:`AvgAtN`.

Each ``update`` takes a batch of tasks with up to ``N`` trials each and a ``valid`` mask that marks the
trials which were *scored*; unscored trials (simulator, judge or environment failures) are left out,
never counted as failures. A task with fewer than ``k`` scored trials cannot estimate pass@k and is
counted in ``tasks_skipped`` instead. ``compute`` returns the macro mean over the counted tasks (NaN
when none). States are sums, so the metrics reduce across processes.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric


def _counts(correct: torch.Tensor, valid: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    if correct.ndim != 2:
        raise ValueError(f"expected correct of shape [tasks, trials], got {tuple(correct.shape)}")
    if valid is None:
        valid = torch.ones_like(correct, dtype=torch.bool)
    if valid.shape != correct.shape:
        raise ValueError(f"valid mask shape {tuple(valid.shape)} differs from correct {tuple(correct.shape)}")
    valid = valid.bool()
    n = valid.sum(dim=1).to(torch.float64)
    c = (correct.bool() & valid).sum(dim=1).to(torch.float64)
    return n, c


def _log_comb(n: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.lgamma(n + 1) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)


def pass_at_k_tensor(n: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """Per-task pass@k (float64 ``[B]``) for ``n >= k``; 1 where fewer than k trials failed."""
    fails = n - c
    kt = torch.full_like(n, float(k))
    ratio = torch.exp(_log_comb(fails.clamp(min=k), kt) - _log_comb(n, kt))
    return torch.where(fails < k, torch.ones_like(n), 1.0 - ratio)


def pass_hat_k_tensor(n: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """Per-task pass^k (float64 ``[B]``) for ``n >= k``; 0 where fewer than k trials succeeded."""
    kt = torch.full_like(n, float(k))
    ratio = torch.exp(_log_comb(c.clamp(min=k), kt) - _log_comb(n, kt))
    return torch.where(c < k, torch.zeros_like(n), ratio)


class _PerTaskMean(Metric):
    full_state_update = False
    higher_is_better = True
    is_differentiable = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tasks", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("tasks_skipped", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def _add(self, per_task: torch.Tensor, counted: torch.Tensor) -> None:
        self.total += per_task[counted].sum()
        self.tasks += counted.sum()
        self.tasks_skipped += (~counted).sum()

    def compute(self) -> torch.Tensor:
        if self.tasks == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.total / self.tasks


class PassAtK(_PerTaskMean):
    """Mean unbiased pass@k over tasks.

    ``update(correct, valid=None)``: ``correct`` bool ``[B, N]`` (trial succeeded), ``valid`` bool
    ``[B, N]`` (trial was scored; default all).
    """

    def __init__(self, k: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        if k < 1:
            raise ValueError(f"PassAtK: k must be >= 1, got {k}")
        self.k = k

    def update(self, correct: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        n, c = _counts(correct, valid)
        counted = n >= self.k
        self._add(pass_at_k_tensor(n.clamp(min=self.k), c, self.k), counted)


class PassHatK(_PerTaskMean):
    """Mean pass^k over tasks (all k drawn trials succeed); same inputs as :class:`PassAtK`."""

    def __init__(self, k: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        if k < 1:
            raise ValueError(f"PassHatK: k must be >= 1, got {k}")
        self.k = k

    def update(self, correct: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        n, c = _counts(correct, valid)
        counted = n >= self.k
        self._add(pass_hat_k_tensor(n.clamp(min=self.k), c, self.k), counted)


class AvgAtN(_PerTaskMean):
    """Mean over tasks of the mean score of the task's scored trials.

    ``update(scores, valid=None)``: ``scores`` float ``[B, N]``, ``valid`` bool ``[B, N]``. A task
    with no scored trial is counted in ``tasks_skipped``.
    """

    def update(self, scores: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        if scores.ndim != 2:
            raise ValueError(f"expected scores of shape [tasks, trials], got {tuple(scores.shape)}")
        valid = torch.ones_like(scores, dtype=torch.bool) if valid is None else valid.bool()
        if valid.shape != scores.shape:
            raise ValueError(f"valid mask shape {tuple(valid.shape)} differs from scores {tuple(scores.shape)}")
        n = valid.sum(dim=1)
        sums = torch.where(valid, scores.to(torch.float64), torch.zeros((), dtype=torch.float64)).sum(dim=1)
        counted = n > 0
        self._add(sums / n.clamp(min=1), counted)
