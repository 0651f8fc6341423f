"""Run execution plans against the agent under test: one call per request, then score.

Running and scoring are separable: :func:`rescore` scores recorded decisions again without the agent.

The executor never sends a request twice for the sake of an alternative (alternatives are oracles of
the same decision). It repeats a call only when the previous attempt failed for infrastructure reasons
(the retry policy); ``agent_calls`` in each record makes that visible.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mimesis_pl.eval.failures import RetryPolicy, run_with_retries
from mimesis_pl.eval.replay.agent import ChatAgent
from mimesis_pl.eval.replay.load import load_cases
from mimesis_pl.eval.replay.plan import ExecutionPlan, ReplayRequest, SkippedStep, project
from mimesis_pl.eval.replay.records import ReplayRecord, ReplaySummary, summarize_replay, write_replay_records
from mimesis_pl.eval.replay.scorer import ReplayScorer


@dataclass(frozen=True)
class ReplayRun:
    """Records of every request (in plan order) and the steps that were skipped."""

    records: tuple[ReplayRecord, ...]
    skipped: tuple[SkippedStep, ...]

    def summary(self) -> ReplaySummary:
        return summarize_replay(self.records, self.skipped)


class ReplayExecutor:
    """Sends each request of each plan to ``agent`` once and scores the decision with ``scorer``.

    Args:
        agent: the agent under test.
        scorer: compares decisions with oracles (default: no LLM judge).
        retry: policy for infrastructure failures of the agent call (default 3 attempts).
        max_concurrency: requests in flight at once.
    """

    def __init__(
        self,
        agent: ChatAgent,
        scorer: ReplayScorer | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 4,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.agent = agent
        self.scorer = scorer or ReplayScorer()
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency

    async def run(self, plans: Iterable[ExecutionPlan], artifacts: str | Path | None = None) -> ReplayRun:
        """Execute ``plans``; when ``artifacts`` is given, write the JSONL records there (atomically)."""
        plans = list(plans)
        seen: set[str] = set()
        for plan in plans:
            if plan.case_id in seen:
                raise ValueError(f"two plans for case {plan.case_id!r}; request ids would collide")
            seen.add(plan.case_id)
        gate = asyncio.Semaphore(self.max_concurrency)

        async def bounded(plan: ExecutionPlan, request: ReplayRequest) -> ReplayRecord:
            async with gate:
                return await self._run_request(plan, request)

        records = await asyncio.gather(*(bounded(p, r) for p in plans for r in p.requests))
        run = ReplayRun(records=tuple(records), skipped=tuple(s for p in plans for s in p.skipped))
        if artifacts is not None:
            write_replay_records(artifacts, run.records, run.skipped)
        return run

    async def _run_request(self, plan: ExecutionPlan, request: ReplayRequest) -> ReplayRecord:
        oracles = plan.expected[request.id]
        preferred = next((o.path_id for o in oracles if o.preferred), None)
        started = time.perf_counter()
        result = await run_with_retries(lambda: self.agent.decide(request), self.retry)
        common = dict(
            request_id=request.id,
            case_id=request.case_id,
            turn=request.turn,
            step=request.step,
            oracles=tuple(o.path_id for o in oracles),
            preferred_path=preferred,
            history=request.history,
            attempts=result.attempts,
            agent_calls=result.attempts,
        )
        if not result.succeeded:
            return ReplayRecord(
                **common,
                status="unscored",
                passed=None,
                matched=(),
                oracle_results=(),
                decision=None,
                failure=result.failure.value if result.failure else None,
                error=result.error,
                duration_s=time.perf_counter() - started,
            )
        decision = result.value
        assert decision is not None
        score = await self.scorer.score(request, oracles, decision)
        passed = score.passed
        return ReplayRecord(
            **common,
            status="scored" if passed is not None else "unscored",
            passed=passed,
            matched=score.matched,
            oracle_results=score.results,
            decision=decision,
            failure=None if passed is not None else "unjudged",
            duration_s=time.perf_counter() - started,
        )


async def rescore(
    records: Iterable[ReplayRecord], plans: Iterable[ExecutionPlan], scorer: ReplayScorer | None = None
) -> ReplayRun:
    """Score recorded decisions again against ``plans`` without calling the agent (e.g. after a case's
    expectations were corrected, or with a judge added). Records without a decision stay as they are."""
    scorer = scorer or ReplayScorer()
    plans = list(plans)
    requests = {r.id: (p, r) for p in plans for r in p.requests}
    out: list[ReplayRecord] = []
    for record in records:
        if record.request_id not in requests:
            raise KeyError(f"record {record.request_id!r} has no request in the given plans (case changed shape?)")
        plan, request = requests[record.request_id]
        if record.decision is None:
            out.append(record)
            continue
        oracles = plan.expected[request.id]
        score = await scorer.score(request, oracles, record.decision)
        passed = score.passed
        out.append(
            replace(
                record,
                oracles=tuple(o.path_id for o in oracles),
                preferred_path=next((o.path_id for o in oracles if o.preferred), None),
                status="scored" if passed is not None else "unscored",
                passed=passed,
                matched=score.matched,
                oracle_results=score.results,
                failure=None if passed is not None else "unjudged",
            )
        )
    return ReplayRun(records=tuple(out), skipped=tuple(s for p in plans for s in p.skipped))


async def run_replay(
    case_paths: Sequence[str | Path],
    agent: ChatAgent,
    artifacts: str | Path | None = None,
    scorer: ReplayScorer | None = None,
    retry: RetryPolicy | None = None,
    max_concurrency: int = 4,
) -> ReplayRun:
    """Load, validate and project every case under ``case_paths``, then execute them against ``agent``."""
    plans = [project(case) for case in load_cases(*case_paths)]
    executor = ReplayExecutor(agent, scorer=scorer, retry=retry, max_concurrency=max_concurrency)
    return await executor.run(plans, artifacts=artifacts)
