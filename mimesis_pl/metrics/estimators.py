"""Exact, pure estimators of capability (pass@k) and reliability (pass^k) from n trials per task.

With ``n`` trials of a task of which ``c`` succeeded:

- pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k trials drawn without
  replacement succeeds (the unbiased estimator of Chen et al. 2021);
- pass^k = C(c, k) / C(n, k): the chance that all k drawn trials succeed;
- avg@n = the mean score over the n trials.

Computed with exact integers (``math.comb``), so hand-worked fractions compare exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction


def _check(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n (k trials drawn from n), got k={k}, n={n}")


def pass_at_k_fraction(n: int, c: int, k: int) -> Fraction:
    """pass@k as an exact fraction."""
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k_fraction(n: int, c: int, k: int) -> Fraction:
    """pass^k as an exact fraction."""
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k) for one task (``n`` trials, ``c`` successes)."""
    return float(pass_at_k_fraction(n, c, k))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k = C(c, k) / C(n, k) for one task (``n`` trials, ``c`` successes)."""
    return float(pass_hat_k_fraction(n, c, k))


def avg_at_n(scores: Iterable[float]) -> float:
    """Mean of one task's trial scores; raises on an empty sequence (a task with no scored trial has
    no avg@n — it must not be counted as 0)."""
    values = [float(s) for s in scores]
    if not values:
        raise ValueError("avg_at_n of no scored trials is undefined")
    return math.fsum(values) / len(values)


def mean_over_tasks(per_task: Iterable[float]) -> float | None:
    """Macro mean over tasks; None when there is no task."""
    values = list(per_task)
    return math.fsum(values) / len(values) if values else None
