"""tau-USI scoring of simulator runs against the human annotation batches.

Pure: per batch, the human summary row and the model row (mean over runs of each run's row, every row
restricted to the tasks both sides have), Dice–Sørensen per feature → D1–D4, ECE per run against the
batch over difficulty bins (averaged over runs). The survey term Eval is computed once over all batches
(:func:`model_eval`) and its mean enters every batch's USI₆ (S71); every ± is a population std (ddof 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mimesis_pl.eval.simulator.tau_usi.data import SURVEY_SCALES, HumanEntry, survey_value
from mimesis_pl.eval.simulator.tau_usi.features import (
    DIMENSIONS,
    FEATURES,
    conversation_features,
    summary_row,
)
from mimesis_pl.metrics.usi import dice_sorensen, expected_calibration_error, usi

EVAL_SEED = 42


@dataclass(frozen=True)
class RunTask:
    """One simulated conversation's result (one task in one seeded run); ``features`` None = no user turn."""

    features: Mapping[str, float] | None
    reward: float
    survey: Mapping[str, str] = field(default_factory=dict)


def success(reward: float) -> float:
    """A conversation's 0/1 success: reward > 0 (as the reference)."""
    return float(reward > 0)


def mean_pstd(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Mean ± population std (ddof 0, the reference's ``np.std``) of the non-null values."""
    kept = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not kept:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": float(np.mean(kept)), "std": float(np.std(kept)), "n": len(kept)}


def survey_task_score(human: Mapping[str, str], model: Mapping[str, str], rng: np.random.Generator) -> float | None:
    """``100 · (1 − mean |h − m|)`` over the fields with a valid human answer; a missing or invalid model
    answer is a uniform random choice among the field's distinct ordinal values (drawn from ``rng``)."""
    gaps = []
    for name in SURVEY_SCALES:
        h = survey_value(name, human.get(name))
        if h is None:
            continue
        m = survey_value(name, model.get(name))
        if m is None:
            scale = SURVEY_SCALES[name]
            low, high = min(scale.values()), max(scale.values())
            m = (float(rng.choice(sorted(set(scale.values())))) - low) / (high - low)
        gaps.append(abs(h - m))
    return 100.0 * (1.0 - float(np.mean(gaps))) if gaps else None


def model_eval(
    human: Mapping[int, Mapping[str, HumanEntry]], runs: Mapping[int, Mapping[str, RunTask]], seed: int = EVAL_SEED
) -> dict[str, Any]:
    """Eval once for the model: per batch, the mean task score over the sorted overlap (every run's answers);
    one ``default_rng(seed)`` consumed in batch, run and task order. ``{"batches": {b: score}, mean, std}``."""
    rng = np.random.default_rng(seed)
    per_batch: dict[int, float | None] = {}
    for batch, entries in sorted(human.items()):
        scores = []
        for run in runs.values():
            for task in sorted(set(entries) & set(run)):
                score = survey_task_score(entries[task].survey, run[task].survey, rng)
                if score is not None:
                    scores.append(score)
        per_batch[batch] = float(np.mean(scores)) if scores else None
    return {"batches": per_batch, **mean_pstd(list(per_batch.values()))}


def _model_row(runs: Mapping[int, Mapping[str, RunTask]], overlap: Sequence[str]) -> dict[str, float]:
    rows = [
        summary_row([run[t].features for t in overlap if t in run])
        for run in runs.values()
        if any(t in run for t in overlap)
    ]
    rows = [r for r in rows if not all(math.isnan(v) for v in r.values())]
    return {f: (float(np.mean([r[f] for r in rows])) if rows else float("nan")) for f in FEATURES}


def dimension_scores(human_row: Mapping[str, float], model_row: Mapping[str, float]) -> dict[str, float | None]:
    """D1–D4: 100 × the mean Dice similarity of each dimension's features (None when a row has no features)."""
    out: dict[str, float | None] = {}
    for dim, names in DIMENSIONS.items():
        h, m = [human_row[f] for f in names], [model_row[f] for f in names]
        out[dim] = None if any(math.isnan(v) for v in (*h, *m)) else float(100.0 * dice_sorensen(h, m).mean())
    return out


def score_batch(
    human: Mapping[str, HumanEntry],
    runs: Mapping[int, Mapping[str, RunTask]],
    difficulty: Mapping[str, float],
    eval_mean: float | None = None,
) -> dict[str, Any]:
    """D1–D4, ECE, USI₅ and (with ``eval_mean``, the model's one Eval) USI₆ for one batch."""
    overlap = sorted(set(human) & {task for run in runs.values() for task in run})
    if not overlap:
        return {"tasks": 0}
    human_row = summary_row([conversation_features(human[t].conversation, "human") for t in overlap])
    model_row = _model_row(runs, overlap)
    dims = dimension_scores(human_row, model_row)
    eces = []
    for run in runs.values():
        tasks = [t for t in human if t in run and t in difficulty]
        if tasks:
            eces.append(
                expected_calibration_error(
                    [success(run[t].reward) for t in tasks],
                    [success(human[t].reward) for t in tasks],
                    [difficulty[t] for t in tasks],
                )
            )
    ece = float(np.mean(eces)) if eces else None
    complete = ece is not None and all(v is not None for v in dims.values())
    return {
        "tasks": len(overlap),
        **dims,
        "ece": ece,
        "eval": eval_mean,
        "usi5": usi(list(dims.values()), ece) if complete else None,
        "usi6": usi(list(dims.values()), ece, eval_mean) if complete and eval_mean is not None else None,
        "sim_success": float(np.mean([success(run[t].reward) for run in runs.values() for t in overlap if t in run])),
        "human_success": float(np.mean([success(human[t].reward) for t in overlap])),
        "human_row": human_row,
        "model_row": model_row,
    }
