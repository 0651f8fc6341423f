"""Decisions that satisfy a given oracle — test-only, since they read the expectation."""

from __future__ import annotations

from mimesis_pl.eval.replay import AgentDecision, FinalExpectation, Oracle, ToolExpectation


def decision_for(oracle: Oracle) -> AgentDecision:
    expect = oracle.expect
    if isinstance(expect, ToolExpectation):
        return AgentDecision.call(expect.tool, expect.pinned_args())
    assert isinstance(expect, FinalExpectation)
    words = list(expect.contains_any[:1]) + list(expect.contains_all)
    return AgentDecision.final(" and ".join(words) if words else "Here you go.")


class AcceptingJudge:
    """Passes every rubric; counts its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    async def grade(self, request, reply, rubrics):
        self.calls.append((request.id, tuple(rubrics)))
        return [True] * len(rubrics)
