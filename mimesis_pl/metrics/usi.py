"""tau-USI pieces (pure numpy): Dice–Sørensen feature similarity, ECE over difficulty bins, the USI mean.

A numpy restatement of the published ``usi_metric.py`` formulas.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DIFFICULTY_EDGES = (0.2, 0.4, 0.6, 0.8)


def dice_sorensen(h: Sequence[float] | np.ndarray, m: Sequence[float] | np.ndarray) -> np.ndarray:
    """Elementwise ``2·min(|h|,|m|) / (|h|+|m|)``, 1 where both are 0 (same shapes, float64 out)."""
    a = np.abs(np.asarray(h, dtype=np.float64))
    b = np.abs(np.asarray(m, dtype=np.float64))
    if a.shape != b.shape:
        raise ValueError(f"dice_sorensen: shapes differ, {a.shape} vs {b.shape}")
    total = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total == 0, 1.0, 2.0 * np.minimum(a, b) / np.where(total == 0, 1.0, total))
    return out


def expected_calibration_error(
    sim_success: Sequence[float],
    human_success: Sequence[float],
    difficulty: Sequence[float],
    edges: Sequence[float] = DIFFICULTY_EDGES,
) -> float:
    """``Σ_b (|b|/n) · |mean_sim_b − mean_human_b|`` over the non-empty difficulty bins.

    Bins are cut at ``edges`` (default 0.2/0.4/0.6/0.8 → 5 bins); a task with difficulty exactly on an
    edge goes to the upper bin (``numpy.digitize``). ``n`` counts every task; NaN when there is none.
    """
    sim = np.asarray(sim_success, dtype=np.float64)
    human = np.asarray(human_success, dtype=np.float64)
    diff = np.asarray(difficulty, dtype=np.float64)
    if not (sim.shape == human.shape == diff.shape) or sim.ndim != 1:
        raise ValueError(f"ECE inputs must be 1-D of one length, got {sim.shape}, {human.shape}, {diff.shape}")
    if list(edges) != sorted(edges):
        raise ValueError(f"edges must be increasing, got {list(edges)}")
    n = sim.shape[0]
    if n == 0:
        return float("nan")
    bins = np.digitize(diff, np.asarray(edges, dtype=np.float64))
    ece = 0.0
    for b in np.unique(bins):
        sel = bins == b
        ece += (sel.sum() / n) * abs(sim[sel].mean() - human[sel].mean())
    return float(ece)


def usi(dimension_scores: Sequence[float], ece: float, eval_score: float | None = None) -> float:
    """The mean of the dimension scores (D1–D4, each 0–100), ``eval_score`` when given, and ``100 · (1 − ece)``:
    USI₅ without the survey term, USI₆ with it."""
    terms = [float(s) for s in dimension_scores]
    if eval_score is not None:
        terms.append(float(eval_score))
    terms.append(100.0 * (1.0 - float(ece)))
    return float(np.mean(terms))
