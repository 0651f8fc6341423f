"""Moved to :mod:`mimesis_pl.eval.simulator.soul.report` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.soul.report import (
    HEADLINE,
    ROW_WEIGHTED,
    describe_unscored,
    sets_without_score,
    soul_markdown,
)

__all__ = ["HEADLINE", "ROW_WEIGHTED", "describe_unscored", "sets_without_score", "soul_markdown"]
