"""RealUserSim Fidelity Index and its user-clustered bootstrap CI (pure numpy).

``hits`` is ``[n_cases, 5]`` of 0/1: one row per judged case, one column per fidelity dimension
(persona, style, technical, interaction, pacing). A case whose simulation or judging failed enters as a
row of zeros (counted as 0 hits, never dropped; the error rate is reported beside the index).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_DIMENSIONS = 5


def _hits_matrix(hits: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    array = np.asarray(hits, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != N_DIMENSIONS:
        raise ValueError(f"hits must be [n_cases, {N_DIMENSIONS}], got shape {array.shape}")
    if not np.isin(array, (0.0, 1.0)).all():
        raise ValueError("hits must hold only 0/1 values")
    return array


def fidelity_index(hits: Sequence[Sequence[int]] | np.ndarray) -> float:
    """``100 · Σ hits / (5 · n_cases)``; NaN when there is no case."""
    array = _hits_matrix(hits)
    if array.shape[0] == 0:
        return float("nan")
    return float(100.0 * array.sum() / (N_DIMENSIONS * array.shape[0]))


def cluster_bootstrap_ci(
    hits: Sequence[Sequence[int]] | np.ndarray, user_ids: Sequence[str], n_boot: int = 10_000, seed: int = 1234
) -> tuple[float, float]:
    """95% CI of the Fidelity Index, resampling *users* (not cases) with replacement.

    Users are indexed in order of first appearance (the draws depend on it); per user ``h_u = Σ hits`` over their
    cases and ``t_u = 5 · #cases``; each of ``n_boot`` draws takes
    ``|U|`` users with replacement (``numpy.random.default_rng(seed)``) and estimates
    ``Σ h / max(Σ t, 1)``; the CI is the 2.5th / 97.5th percentile, ×100.
    """
    array = _hits_matrix(hits)
    if len(user_ids) != array.shape[0]:
        raise ValueError(f"user_ids has {len(user_ids)} entries for {array.shape[0]} cases")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if array.shape[0] == 0:
        return float("nan"), float("nan")
    users = list(dict.fromkeys(user_ids))  # first appearance, as the reference's groups (S88)
    index = {u: i for i, u in enumerate(users)}
    h = np.zeros(len(users))
    t = np.zeros(len(users))
    for row, user in zip(array, user_ids):
        h[index[user]] += row.sum()
        t[index[user]] += N_DIMENSIONS
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(users), size=(n_boot, len(users)))
    estimates = h[draws].sum(axis=1) / np.maximum(t[draws].sum(axis=1), 1.0)
    lo, hi = np.percentile(estimates, [2.5, 97.5])
    return float(100.0 * lo), float(100.0 * hi)
