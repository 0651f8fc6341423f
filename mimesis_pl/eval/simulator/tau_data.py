"""Moved to :mod:`mimesis_pl.eval.simulator.tau_usi.data` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.tau_usi.data import (
    SURVEY_SCALES,
    HumanEntry,
    TauTask,
    load_difficulty,
    load_human_batches,
    load_tau_tasks,
    survey_answers,
    survey_value,
)

__all__ = [
    "HumanEntry",
    "SURVEY_SCALES",
    "TauTask",
    "load_difficulty",
    "load_human_batches",
    "load_tau_tasks",
    "survey_answers",
    "survey_value",
]
