"""A researcher's own CSD estimator, outside mimesis_pl: YAML names it ``csd.estimator: my_estimator:squared_gap``."""

from __future__ import annotations

#: Calls, by this process (a test reads it to see the update used this estimator).
CALLS: list[float] = []


def squared_gap(*, student, target, mask):
    """½ (t̃ − s)² pulled toward the teacher on coached tokens, token-mean (the sampled token's log-prob only)."""
    gap = (target - student) * mask
    loss = 0.5 * (gap**2).sum() / mask.sum().clamp(min=1.0)
    CALLS.append(float(mask.sum()))
    return loss
