"""Coached on-policy self-distillation (CSD), coach side: which turns to coach, what the coach sees,
the coaches, the leak checks on their notes, and the batch step that produces ``{(trajectory, turn): note}``
for :func:`mimesis_pl.rl.teacher.build_teacher_rows`."""

from mimesis_pl.csd.coach import Coach, CoachResult, OpenAICoach, finish_note
from mimesis_pl.csd.evidence import TurnEvidence, UserTurn, select_turns, turn_evidence
from mimesis_pl.csd.leaks import find_leaks, hidden_values, scan_for_privileged
from mimesis_pl.csd.notebook import COUNTERS, NoteRecord, coach_batch
from mimesis_pl.csd.prompts import (
    CoachRequest,
    HistoryLimits,
    build_request,
    coach_messages,
    render_history,
)
from mimesis_pl.csd.scripted_coach import ScriptedCoach

__all__ = [
    "COUNTERS",
    "Coach",
    "CoachRequest",
    "CoachResult",
    "HistoryLimits",
    "NoteRecord",
    "OpenAICoach",
    "ScriptedCoach",
    "TurnEvidence",
    "UserTurn",
    "build_request",
    "coach_batch",
    "coach_messages",
    "find_leaks",
    "finish_note",
    "hidden_values",
    "render_history",
    "scan_for_privileged",
    "select_turns",
    "turn_evidence",
]
