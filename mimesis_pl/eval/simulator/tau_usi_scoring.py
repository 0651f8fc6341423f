"""tau-USI scoring of simulator runs against one human annotation batch.

Pure: per batch, the human summary row and the model row (mean over runs of each run's row, every row
restricted to the tasks both sides have), Dice–Sørensen per feature → D1–D4, ECE per run against the
batch over difficulty bins (averaged over runs), the optional survey term Eval, and USI₅ / USI₆.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mimesis_pl.eval.simulator.tau_data import SURVEY_SCALES, HumanEntry, survey_value
from mimesis_pl.eval.simulator.tau_features import (
    DIMENSIONS,
    FEATURES,
    conversation_features,
    summary_row,
)
from mimesis_pl.metrics.usi import dice_sorensen, expected_calibration_error, usi


@dataclass(frozen=True)
class RunTask:
    """One simulated conversation's result (one task in one seeded run)."""

    features: Mapping[str, float]
    reward: float
    survey: Mapping[str, str] = field(default_factory=dict)


def _eval_term(
    run: Mapping[str, RunTask],
    tasks: list[str],
    human_survey: Mapping[str, Mapping[str, str]],
    rng: np.random.Generator,
) -> float | None:
    scores = []
    for task in tasks:
        answers = human_survey.get(task)
        if not answers:
            continue
        gaps = []
        for name in sorted(SURVEY_SCALES):
            h = survey_value(name, answers.get(name))
            if h is None:
                continue
            m = survey_value(name, run[task].survey.get(name))
            if m is None:  # a missing model answer becomes a random valid one (reference: default_rng(42))
                m = survey_value(name, rng.choice(sorted(SURVEY_SCALES[name])))
            gaps.append(abs(h - m))
        if gaps:
            scores.append(100.0 * (1.0 - float(np.mean(gaps))))
    return float(np.mean(scores)) if scores else None


def score_batch(
    human: Mapping[str, HumanEntry],
    runs: Mapping[int, Mapping[str, RunTask]],
    difficulty: Mapping[str, float],
    human_survey: Mapping[str, Mapping[str, str]] | None = None,
    seed: int = 42,
) -> dict[str, Any]:
    """D1–D4, ECE, Eval (when ``human_survey`` is given, keyed by task), USI₅ and USI₆ for one batch."""
    overlap = sorted(set(human) & {task for run in runs.values() for task in run})
    if not overlap:
        return {"tasks": 0}
    human_row = summary_row([conversation_features(human[t].conversation) for t in overlap])
    run_rows = [
        summary_row([run[t].features for t in overlap if t in run])
        for run in runs.values()
        if any(t in run for t in overlap)
    ]
    model_row = {f: float(np.mean([row[f] for row in run_rows])) for f in FEATURES}
    dims = {}
    for dim, names in DIMENSIONS.items():
        sims = dice_sorensen([human_row[f] for f in names], [model_row[f] for f in names])
        dims[dim] = float(100.0 * sims.mean())
    eces = []
    for run in runs.values():
        tasks = [t for t in overlap if t in run and t in difficulty]
        if tasks:
            eces.append(
                expected_calibration_error(
                    [float(run[t].reward >= 1.0) for t in tasks],
                    [float(human[t].reward >= 1.0) for t in tasks],
                    [difficulty[t] for t in tasks],
                )
            )
    ece = float(np.mean(eces)) if eces else None
    eval_score = None
    if human_survey is not None:
        rng = np.random.default_rng(seed)
        evals = [
            e
            for run in runs.values()
            if (e := _eval_term(run, [t for t in overlap if t in run], human_survey, rng)) is not None
        ]
        eval_score = float(np.mean(evals)) if evals else None
    return {
        "tasks": len(overlap),
        **dims,
        "ece": ece,
        "eval": eval_score,
        "usi5": usi(list(dims.values()), ece) if ece is not None else None,
        "usi6": usi(list(dims.values()), ece, eval_score) if ece is not None and eval_score is not None else None,
        "sim_success": float(np.mean([run[t].reward >= 1.0 for run in runs.values() for t in overlap if t in run])),
        "human_success": float(np.mean([human[t].reward >= 1.0 for t in overlap])),
        "human_row": human_row,
        "model_row": model_row,
    }
