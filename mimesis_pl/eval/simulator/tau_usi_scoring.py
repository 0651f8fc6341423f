"""Moved to :mod:`mimesis_pl.eval.simulator.tau_usi.scoring` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.tau_usi.scoring import (
    EVAL_SEED,
    RunTask,
    dimension_scores,
    mean_pstd,
    model_eval,
    score_batch,
    success,
    survey_task_score,
)

__all__ = [
    "EVAL_SEED",
    "RunTask",
    "dimension_scores",
    "mean_pstd",
    "model_eval",
    "score_batch",
    "success",
    "survey_task_score",
]
