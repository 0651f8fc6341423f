"""Moved to :mod:`mimesis_pl.eval.simulator.realusersim.protocol` (one folder per suite); this old path
re-exports it."""

from mimesis_pl.eval.simulator.realusersim.protocol import (
    CLOSE,
    CONDITIONS,
    PRIMER,
    Condition,
    Conversation,
    build_user_prompt,
    converse,
    judge_fidelity,
    judged_turns,
)

__all__ = [
    "CLOSE",
    "CONDITIONS",
    "Condition",
    "Conversation",
    "PRIMER",
    "build_user_prompt",
    "converse",
    "judge_fidelity",
    "judged_turns",
]
