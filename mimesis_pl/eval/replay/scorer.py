"""Score one actual decision against every oracle of its request (any-of).

Alternatives are oracles for one trial, not extra tries (docs/decisions.md E4): the agent is asked
once, and that one decision passes when it matches the preferred step or any alternative's. A request
is *unscored* — not failed — when no oracle matched and some oracle could not be judged (no judge
configured, or the judge kept failing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mimesis_pl.eval.failures import RetryPolicy, run_with_retries
from mimesis_pl.eval.replay.agent import AgentDecision
from mimesis_pl.eval.replay.case import FinalExpectation, ToolExpectation
from mimesis_pl.eval.replay.matching import final_reply_mismatches, tool_call_mismatches
from mimesis_pl.eval.replay.plan import Oracle, ReplayRequest
from mimesis_pl.failures import JudgeFailure


@runtime_checkable
class ReplayJudge(Protocol):
    """Grades a final reply against rubrics; called once per request with every pending rubric.

    Returns one verdict per rubric (same order). The rubrics are alternatives: the caller counts the
    reply as passing when any verdict is true, so a judge prompt should say "any of". Raise
    :class:`~mimesis_pl.failures.JudgeFailure` when grading is impossible.
    """

    async def grade(self, request: ReplayRequest, reply: str, rubrics: Sequence[str]) -> Sequence[bool]: ...


@dataclass(frozen=True)
class OracleResult:
    """The verdict of one oracle: ``passed`` is None when it could not be judged."""

    path_id: str
    preferred: bool
    passed: bool | None
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "path_id": self.path_id,
            "preferred": self.preferred,
            "passed": self.passed,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class RequestScore:
    """Per-oracle results of one decision and the any-of verdict."""

    results: tuple[OracleResult, ...]

    @property
    def passed(self) -> bool | None:
        if any(r.passed for r in self.results):
            return True
        return None if any(r.passed is None for r in self.results) else False

    @property
    def matched(self) -> tuple[str, ...]:
        return tuple(r.path_id for r in self.results if r.passed)

    @property
    def matched_preferred(self) -> bool:
        return any(r.passed and r.preferred for r in self.results)


def _tool_reasons(expect: ToolExpectation, decision: AgentDecision) -> list[str]:
    if decision.parse_error is not None:
        return [f"the tool call could not be parsed: {decision.parse_error}"]
    if not decision.tool_calls:
        return [f"replied with text instead of calling {expect.tool!r}"]
    if len(decision.tool_calls) > 1:
        names = [c.name for c in decision.tool_calls]
        return [f"made {len(names)} tool calls {names}; a step is exactly one call"]
    call = decision.tool_calls[0]
    return tool_call_mismatches(expect, call.name, call.arguments)


def _final_reasons(expect: FinalExpectation, decision: AgentDecision) -> list[str]:
    if decision.parse_error is not None:
        return [f"tried to call a tool but the call could not be parsed: {decision.parse_error}"]
    if decision.tool_calls:
        return [f"called tool {decision.tool_calls[0].name!r} instead of replying"]
    return final_reply_mismatches(expect, decision.text)


class ReplayScorer:
    """Compares decisions with oracles; LLM-judged rubrics go to ``judge`` (optional).

    Args:
        judge: grades ``judge:`` rubrics; without one, such oracles are unscored.
        judge_retry: retry policy for judge calls (:class:`JudgeFailure` and timeouts are retried).
    """

    def __init__(self, judge: ReplayJudge | None = None, judge_retry: RetryPolicy | None = None) -> None:
        self.judge = judge
        self.judge_retry = judge_retry or RetryPolicy(max_attempts=2, backoff_s=0.5)

    async def score(self, request: ReplayRequest, oracles: Sequence[Oracle], decision: AgentDecision) -> RequestScore:
        verdicts: list[tuple[bool | None, list[str]]] = []
        pending: dict[str, list[int]] = {}  # rubric -> indices of oracles waiting for it
        for i, oracle in enumerate(oracles):
            expect = oracle.expect
            if isinstance(expect, ToolExpectation):
                reasons = _tool_reasons(expect, decision)
            else:
                reasons = _final_reasons(expect, decision)
            if not reasons and isinstance(expect, FinalExpectation) and expect.judge is not None:
                pending.setdefault(expect.judge, []).append(i)
                verdicts.append((None, []))
            else:
                verdicts.append((not reasons, reasons))
        if pending:
            await self._judge(request, decision.text, pending, verdicts)
        return RequestScore(
            tuple(
                OracleResult(o.path_id, o.preferred, passed, tuple(reasons))
                for o, (passed, reasons) in zip(oracles, verdicts)
            )
        )

    async def _judge(
        self,
        request: ReplayRequest,
        reply: str,
        pending: dict[str, list[int]],
        verdicts: list[tuple[bool | None, list[str]]],
    ) -> None:
        rubrics = list(pending)
        if self.judge is None:
            for indices in pending.values():
                for i in indices:
                    verdicts[i] = (None, ["judge rubric not graded: no judge configured"])
            return
        judge = self.judge

        async def grade() -> list[bool]:
            grades = list(await judge.grade(request, reply, rubrics))
            if len(grades) != len(rubrics) or not all(isinstance(g, bool) for g in grades):
                raise JudgeFailure(f"judge returned {grades!r} for {len(rubrics)} rubric(s); expected one bool each")
            return grades

        result = await run_with_retries(grade, self.judge_retry)
        for rubric, indices in pending.items():
            for i in indices:
                if not result.succeeded:
                    verdicts[i] = (None, [f"judge failed after {result.attempts} attempt(s): {result.error}"])
                else:
                    ok = result.value[rubrics.index(rubric)]  # type: ignore[index]
                    verdicts[i] = (ok, [] if ok else [f"judge rejected the reply (rubric: {rubric[:80]!r})"])
