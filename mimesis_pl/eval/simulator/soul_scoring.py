"""Moved to :mod:`mimesis_pl.eval.simulator.soul.scoring` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.soul.scoring import (
    ALIGNX_SPLITS,
    SOUL_NAMES,
    SOUL_SETS,
    across_seeds,
    axis_scores,
    dataset_scores,
    degenerate_seeds,
    mean_std,
    row_weighted_overall,
    seed_summary,
    soul_index,
)

__all__ = [
    "ALIGNX_SPLITS",
    "SOUL_NAMES",
    "SOUL_SETS",
    "across_seeds",
    "axis_scores",
    "dataset_scores",
    "degenerate_seeds",
    "mean_std",
    "row_weighted_overall",
    "seed_summary",
    "soul_index",
]
