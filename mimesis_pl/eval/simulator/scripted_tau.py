"""Moved to :mod:`mimesis_pl.eval.simulator.tau_usi.scripted` (one folder per suite); this old path re-exports it."""

from mimesis_pl.eval.simulator.tau_usi.scripted import (
    STOP_LINE,
    SURVEY_MARKER,
    Messages,
    scripted_tau_agent,
    scripted_tau_user,
)

__all__ = ["Messages", "STOP_LINE", "SURVEY_MARKER", "scripted_tau_agent", "scripted_tau_user"]
