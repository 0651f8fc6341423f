"""Moved to :mod:`mimesis_pl.eval.simulator.tau_usi.features` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.tau_usi.features import (
    DIMENSIONS,
    FEATURES,
    RAW_FEATURES,
    STOP,
    Source,
    conversation_features,
    is_meta,
    question_class,
    report_row,
    row_column,
    strip_markup,
    summary_row,
    user_turns,
)

__all__ = [
    "DIMENSIONS",
    "FEATURES",
    "RAW_FEATURES",
    "STOP",
    "Source",
    "conversation_features",
    "is_meta",
    "question_class",
    "report_row",
    "row_column",
    "strip_markup",
    "summary_row",
    "user_turns",
]
