"""SOUL scoring (docs/decisions.md S23): pure functions over per-item task scores.

Per seed: each data set's score is the mean task score of its scored rows × 100; each axis is the mean
of its data sets that have a score; the headline is **SOUL-Index (axis mean)** = the mean of the axes
that have a score (S23: one documented headline, every axis weighted equally, so a 1,000-row set does not
outweigh a 50-row one). The paper's "Overall" is the reference's ``val-core/all/score``: a row-weighted mean
over every scored row of the row's ``all/score`` (× 100), which is the task score except on Sotopia, whose rows
carry ``0.1 · mean(raw dimensions)`` (:func:`headline_value`, often negative; docs/decisions.md S82); we report it
beside ours, named ``overall``, never as the headline, and beside it the row-weighted mean of the task scores
(``overall_row_weighted``, ours). Across seeds: a seed is *degenerate* (an infrastructure failure, not a bad
model) when there are ≥ 2 seeds, it has ≥ 8 data sets at exactly 0.0 and its Overall is more than 15 points
below the seeds' median; degenerate seeds are dropped, the rest reported as mean ± sample std.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from mimesis_pl.eval.simulator.soul.data import soul_sets
from mimesis_pl.eval.simulator.suite import mean_std
from mimesis_pl.tasks.registry import SOUL_AXIS_ORDER, soul_axes

ALIGNX_SPLITS = ("alignx_demo", "alignx_pair", "alignx_ugc", "alignx_arbitrary", "alignx_history16")
#: Sotopia's seven judged dimensions, logged raw as ``sotopia/<dimension>`` (their ranges: ``tasks/sotopia.py``).
SOTOPIA_DIMENSIONS = (
    "believability",
    "relationship",
    "knowledge",
    "secret",
    "social_rules",
    "financial_and_material_benefits",
    "goal",
)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def dataset_scores(scores: Mapping[str, Sequence[float]]) -> dict[str, float | None]:
    """``{data_source: mean task score × 100}`` of the scored rows (None for a set with no scored row)."""
    return {
        source: (None if not values else 100.0 * math.fsum(values) / len(values)) for source, values in scores.items()
    }


def axis_scores(datasets: Mapping[str, float | None]) -> dict[str, float | None]:
    """Each SOUL axis (:func:`~mimesis_pl.tasks.registry.soul_axes`) = the mean of its data sets that have a score
    (None when none has)."""
    return {
        axis: _mean([datasets[s] for s in sets if datasets.get(s) is not None]) for axis, sets in soul_axes().items()
    }


def soul_index(axes: Mapping[str, float | None]) -> float | None:
    """The headline (S23): the mean of the axes that have a score."""
    return _mean([v for v in axes.values() if v is not None])


def row_weighted_overall(scores: Mapping[str, Sequence[float]]) -> float | None:
    """The mean over every scored row of every set, × 100 (big sets weigh more). Over the rows' task scores it is
    ``overall_row_weighted`` (ours); over their :func:`headline_value` it is the paper's Overall."""
    every = [v for values in scores.values() for v in values]
    return None if not every else 100.0 * math.fsum(every) / len(every)


def headline_value(source: str, score: float, metrics: Mapping[str, float]) -> float:
    """A scored row's ``all/score`` as the reference logs it: the task score, except on Sotopia
    ``0.1 · mean(raw dimensions)`` (in [-1, 1]; the reference's Overall averages this, not the reward: S82)."""
    if source != "sotopia":
        return float(score)
    missing = [d for d in SOTOPIA_DIMENSIONS if f"sotopia/{d}" not in metrics]
    if missing:
        raise ValueError(f"SOUL: a scored sotopia row lacks its raw dimension(s) {', '.join(missing)} in its metrics")
    return 0.1 * math.fsum(float(metrics[f"sotopia/{d}"]) for d in SOTOPIA_DIMENSIONS) / len(SOTOPIA_DIMENSIONS)


def seed_summary(
    scores: Mapping[str, Sequence[float]], headline: Mapping[str, Sequence[float]] | None = None
) -> dict[str, object]:
    """One seed's numbers from its scored rows' task scores ``{data_source: [score, …]}`` and their
    :func:`headline_value` in the same order (``headline``; the scores themselves when no Sotopia row is in)."""
    datasets = dataset_scores(scores)
    axes = axis_scores(datasets)
    alignx = [datasets[s] for s in ALIGNX_SPLITS if datasets.get(s) is not None]
    return {
        "datasets": datasets,
        "axes": axes,
        "soul_index": soul_index(axes),
        "axes_covered": sum(v is not None for v in axes.values()),
        "overall": row_weighted_overall(scores if headline is None else headline),
        "overall_row_weighted": row_weighted_overall(scores),
        "alignx_combined": _mean(alignx),
    }


def degenerate_seeds(
    per_seed: Mapping[int, Mapping[str, object]], min_zero_sets: int = 8, gap: float = 15.0
) -> dict[int, str]:
    """``{seed: reason}`` of the seeds to drop (the reference's rule): ≥ 2 seeds, ≥ ``min_zero_sets`` data sets at
    exactly 0.0, and an Overall (the paper's) more than ``gap`` points below the seeds' median."""
    if len(per_seed) < 2:
        return {}
    overalls = [s["overall"] for s in per_seed.values() if s["overall"] is not None]
    if not overalls:
        return {}
    median = statistics.median(overalls)
    out = {}
    for seed, summary in per_seed.items():
        zeros = sum(v == 0.0 for v in summary["datasets"].values())
        overall = summary["overall"]
        if zeros >= min_zero_sets and overall is not None and overall < median - gap:
            out[seed] = f"{zeros} sets at 0.0 and Overall {overall:.1f} < median {median:.1f} - {gap:g}"
    return out


def across_seeds(per_seed: Mapping[int, Mapping[str, object]], dropped: Mapping[int, str]) -> dict[str, object]:
    """Mean ± std over the kept seeds of every data set, axis and headline."""
    kept = [s for seed, s in per_seed.items() if seed not in dropped]
    order = soul_sets()
    sets = sorted({k for s in kept for k in s["datasets"]}, key=lambda k: order.index(k) if k in order else len(order))
    return {
        "datasets": {k: mean_std([s["datasets"].get(k) for s in kept]) for k in sets},
        "axes": {a: mean_std([s["axes"][a] for s in kept]) for a in SOUL_AXIS_ORDER},
        "soul_index": mean_std([s["soul_index"] for s in kept]),
        "overall": mean_std([s["overall"] for s in kept]),
        "overall_row_weighted": mean_std([s["overall_row_weighted"] for s in kept]),
        "alignx_combined": mean_std([s["alignx_combined"] for s in kept]),
    }
