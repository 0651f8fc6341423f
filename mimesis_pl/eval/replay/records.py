"""Replay artifacts: one JSONL record per request (and per skipped step), and their summary.

Every record lists the request's history with, per message, whether it came from a fixture (recorded
in the case) or a real call, so a reader can tell what was replayed from what was run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesis_pl.eval.io import write_jsonl_atomic
from mimesis_pl.eval.replay.agent import AgentDecision
from mimesis_pl.eval.replay.plan import HistoryEntry, SkippedStep
from mimesis_pl.eval.replay.scorer import OracleResult

RECORD_VERSION = 1


@dataclass(frozen=True)
class ReplayRecord:
    """The outcome of one replay request.

    ``status`` is ``"scored"`` (``passed`` is a bool), or ``"unscored"`` (the agent could not be reached
    within the retry policy, or no oracle matched and some could not be judged).
    """

    request_id: str
    case_id: str
    turn: int
    step: int
    oracles: tuple[str, ...]
    preferred_path: str | None
    status: str
    passed: bool | None
    matched: tuple[str, ...]
    oracle_results: tuple[OracleResult, ...]
    decision: AgentDecision | None
    history: tuple[HistoryEntry, ...]
    attempts: int = 1
    failure: str | None = None
    error: str | None = None
    duration_s: float = 0.0
    agent_calls: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": "request",
            "version": RECORD_VERSION,
            "request_id": self.request_id,
            "case_id": self.case_id,
            "turn": self.turn,
            "step": self.step,
            "oracles": list(self.oracles),
            "preferred_path": self.preferred_path,
            "status": self.status,
            "passed": self.passed,
            "matched": list(self.matched),
            "oracle_results": [r.to_dict() for r in self.oracle_results],
            "decision": self.decision.to_dict() if self.decision is not None else None,
            "history": [h.to_dict() for h in self.history],
            "observations": [
                {"message_index": h.message_index, "turn": h.turn, "step": h.step, "source": h.source}
                for h in self.history
                if h.kind == "observation"
            ],
            "attempts": self.attempts,
            "agent_calls": self.agent_calls,
            "failure": self.failure,
            "error": self.error,
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayRecord:
        return cls(
            request_id=data["request_id"],
            case_id=data["case_id"],
            turn=data["turn"],
            step=data["step"],
            oracles=tuple(data["oracles"]),
            preferred_path=data.get("preferred_path"),
            status=data["status"],
            passed=data["passed"],
            matched=tuple(data.get("matched", ())),
            oracle_results=tuple(
                OracleResult(r["path_id"], r["preferred"], r["passed"], tuple(r.get("reasons", ())))
                for r in data.get("oracle_results", ())
            ),
            decision=AgentDecision.from_dict(data["decision"]) if data.get("decision") else None,
            history=tuple(HistoryEntry(**h) for h in data.get("history", ())),
            attempts=data.get("attempts", 1),
            failure=data.get("failure"),
            error=data.get("error"),
            duration_s=data.get("duration_s", 0.0),
            agent_calls=data.get("agent_calls", 1),
        )


def skipped_to_dict(skipped: SkippedStep) -> dict[str, Any]:
    return {"record": "skipped", "version": RECORD_VERSION, **skipped.to_dict()}


def write_replay_records(
    path: str | Path, records: Iterable[ReplayRecord], skipped: Iterable[SkippedStep] = ()
) -> Path:
    """Write the artifacts JSONL atomically: request records first, then skipped steps."""
    rows = [r.to_dict() for r in records] + [skipped_to_dict(s) for s in skipped]
    return write_jsonl_atomic(path, rows)


def read_replay_records(path: str | Path) -> tuple[list[ReplayRecord], list[SkippedStep]]:
    records: list[ReplayRecord] = []
    skipped: list[SkippedStep] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: not a JSON record ({err.msg})") from None
        if data.get("record") == "skipped":
            skipped.append(SkippedStep(data["case_id"], data["turn"], data["path_id"], data["step"], data["reason"]))
        else:
            records.append(ReplayRecord.from_dict(data))
    return records, skipped


@dataclass(frozen=True)
class ReplaySummary:
    """Replay results (teacher forcing). Never averaged with episode results.

    ``pass_rate`` is over scored requests; ``preferred_rate`` counts decisions that matched the preferred
    path; ``cases_passed`` counts cases whose every request was scored and passed and that skipped nothing.
    """

    cases: int
    requests: int
    scored: int
    passed: int
    unscored: int
    skipped_steps: int
    preferred_matches: int
    cases_passed: int
    per_case: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    unscored_by_kind: Mapping[str, int] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    @property
    def preferred_rate(self) -> float | None:
        return self.preferred_matches / self.scored if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": "replay",
            "cases": self.cases,
            "requests": self.requests,
            "scored": self.scored,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "preferred_rate": self.preferred_rate,
            "unscored": self.unscored,
            "unscored_by_kind": dict(self.unscored_by_kind),
            "skipped_steps": self.skipped_steps,
            "cases_passed": self.cases_passed,
            "per_case": {k: dict(v) for k, v in self.per_case.items()},
        }


def summarize_replay(records: Iterable[ReplayRecord], skipped: Iterable[SkippedStep] = ()) -> ReplaySummary:
    records, skipped = list(records), list(skipped)
    per_case: dict[str, dict[str, int]] = {}
    blank = {"requests": 0, "passed": 0, "failed": 0, "unscored": 0, "skipped": 0}
    unscored_by_kind: dict[str, int] = {}
    for r in records:
        row = per_case.setdefault(r.case_id, dict(blank))
        row["requests"] += 1
        if r.status != "scored":
            row["unscored"] += 1
            kind = r.failure or "unjudged"
            unscored_by_kind[kind] = unscored_by_kind.get(kind, 0) + 1
        elif r.passed:
            row["passed"] += 1
        else:
            row["failed"] += 1
    for s in skipped:
        per_case.setdefault(s.case_id, dict(blank))["skipped"] += 1
    scored = [r for r in records if r.status == "scored"]
    return ReplaySummary(
        cases=len(per_case),
        requests=len(records),
        scored=len(scored),
        passed=sum(1 for r in scored if r.passed),
        unscored=len(records) - len(scored),
        skipped_steps=len(skipped),
        preferred_matches=sum(1 for r in scored if r.preferred_path in r.matched),
        cases_passed=sum(
            1
            for row in per_case.values()
            if row["requests"] and row["passed"] == row["requests"] and not row["skipped"]
        ),
        per_case={k: per_case[k] for k in sorted(per_case)},
        unscored_by_kind=dict(sorted(unscored_by_kind.items())),
    )
