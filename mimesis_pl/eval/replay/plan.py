"""Projection of a replay case into an immutable :class:`ExecutionPlan` (invariants: docs/decisions.md E3).

The plan splits what the agent may see from what only the scorer may see:

- ``requests`` — one :class:`ReplayRequest` per distinct recorded history: the system prompt, the
  earlier turns along their *preferred* paths, the current user utterance and the recorded steps
  ``0..N-1`` of the paths that share that history. Nothing of an expectation is ever copied into one.
- ``expected`` — for each request id, the :class:`Oracle` of every path consistent with its history:
  the scorer compares the agent's one decision with each of them (any-of).
- ``skipped`` — steps that cannot be replayed, with the reason (an earlier observation of their
  history has no recorded evidence).

Ids are positional (``{case}:t{turn}:s{step}:h{k}``) so they reveal nothing about the paths.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

from mimesis_pl.eval.replay.case import Expectation, Path, ReplayCase, Step, ToolExpectation
from mimesis_pl.eval.values import canonical_json, freeze, thaw

HistoryKind = Literal["system", "user", "call", "observation", "reply"]


@dataclass(frozen=True)
class HistoryEntry:
    """Where one step message (call, tool output, reply) of a request's history came from.

    ``source`` is ``"fixture"`` for everything replay puts in a history (recorded in the case) and
    ``"real"`` for output produced by a live call (episodes, or local tools run for real). A tool call's
    arguments are always the recorded ones: a step without them is not replayable history (E21).
    """

    message_index: int
    turn: int
    step: int | None
    kind: HistoryKind
    source: Literal["fixture", "real"] = "fixture"
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class ReplayRequest:
    """What the agent under test receives for one decision; holds no expectation by construction."""

    id: str
    case_id: str
    turn: int
    step: int
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]
    context: Mapping[str, Any]
    history: tuple[HistoryEntry, ...]

    def to_openai(self) -> dict[str, Any]:
        """``{"messages", "tools", "context"}`` as fresh JSON-ready objects (OpenAI chat format)."""
        return {"messages": thaw(self.messages), "tools": thaw(self.tools), "context": thaw(self.context)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "case_id": self.case_id,
            "turn": self.turn,
            "step": self.step,
            **self.to_openai(),
            "history": [h.to_dict() for h in self.history],
        }


@dataclass(frozen=True)
class Oracle:
    """One acceptable outcome of a request: step ``step`` of path ``path_id``."""

    path_id: str
    preferred: bool
    turn: int
    step: int
    expect: Expectation

    def to_dict(self) -> dict[str, Any]:
        return {
            "path_id": self.path_id,
            "preferred": self.preferred,
            "turn": self.turn,
            "step": self.step,
            "expect": self.expect.to_dict(),
        }


@dataclass(frozen=True)
class SkippedStep:
    """A step of a path that no request covers, and why."""

    case_id: str
    turn: int
    path_id: str
    step: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class ExecutionPlan:
    """The immutable projection of one case: requests for the runtime, oracles for the scorer."""

    case_id: str
    requests: tuple[ReplayRequest, ...]
    expected: Mapping[str, tuple[Oracle, ...]]
    skipped: tuple[SkippedStep, ...]

    def to_json(self) -> str:
        """Canonical JSON of the whole plan (byte-identical for equal cases)."""
        return canonical_json(
            {
                "case_id": self.case_id,
                "requests": [r.to_dict() for r in self.requests],
                "expected": {rid: [o.to_dict() for o in oracles] for rid, oracles in self.expected.items()},
                "skipped": [s.to_dict() for s in self.skipped],
            }
        )


def _tool_call_id(turn: int, step: int) -> str:
    return f"call_t{turn}_s{step}"


def _step_history(turn: int, index: int, step: Step) -> list[tuple[dict[str, Any], HistoryEntry]]:
    """The recorded messages of one completed step (the caller has checked it has evidence)."""
    assert step.observation is not None and step.observation.content is not None
    if not isinstance(step.expect, ToolExpectation):
        return [({"role": "assistant", "content": step.observation.content}, HistoryEntry(-1, turn, index, "reply"))]
    assert step.observation.call_args is not None  # has_evidence: no call is rebuilt from the expectation (E21)
    # Sorted keys: histories equal up to key order are one history, one request (E22).
    arguments = json.dumps(thaw(step.observation.call_args), ensure_ascii=False, sort_keys=True)
    call_id = _tool_call_id(turn, index)
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": step.expect.tool, "arguments": arguments},
            }
        ],
    }
    output = {"role": "tool", "tool_call_id": call_id, "content": step.observation.content}
    return [
        (call, HistoryEntry(-1, turn, index, "call", tool_call_id=call_id)),
        (output, HistoryEntry(-1, turn, index, "observation", tool_call_id=call_id)),
    ]


def _missing_evidence(path: Path, upto: int) -> int | None:
    """Index of the first step before ``upto`` whose output was not recorded, or None."""
    return next((k for k in range(upto) if not path.steps[k].has_evidence), None)


def _why_missing(path: Path, k: int) -> str:
    step = path.steps[k]
    what = "reply" if step.is_final else "observation"
    if step.observation is None:
        return f"step {k} of path {path.id!r} has no recorded {what}"
    if step.observation.authoritative:  # a tool output without the call that produced it
        return f"step {k} of path {path.id!r} recorded its tool output but not the call's arguments (call_args)"
    return f"step {k} of path {path.id!r} has {what} evidence {step.observation.evidence!r}, not 'recorded'"


def project(case: ReplayCase) -> ExecutionPlan:
    """Turn one validated case into its :class:`ExecutionPlan`; pure and deterministic."""
    context = dict(case.context)
    prefix: list[tuple[dict[str, Any], HistoryEntry]] = []
    if case.system is not None:
        prefix.append(({"role": "system", "content": case.system}, HistoryEntry(-1, 0, None, "system")))
    requests: list[ReplayRequest] = []
    expected: dict[str, tuple[Oracle, ...]] = {}
    skipped: list[SkippedStep] = []
    carry_failure: str | None = None

    for t, turn in enumerate(case.turns):
        if carry_failure is not None:
            skipped.extend(
                SkippedStep(case.id, t, p.id, n, carry_failure) for p in turn.paths for n in range(len(p.steps))
            )
            continue
        turn_context = freeze({**context, **turn.context})
        base = prefix + [({"role": "user", "content": turn.user}, HistoryEntry(-1, t, None, "user"))]
        for n in range(max(len(p.steps) for p in turn.paths)):
            groups: OrderedDict[str, tuple[list[tuple[dict[str, Any], HistoryEntry]], list[Path]]] = OrderedDict()
            for path in turn.paths:
                if n >= len(path.steps):
                    continue
                gap = _missing_evidence(path, n)
                if gap is not None:
                    skipped.append(SkippedStep(case.id, t, path.id, n, "not replayable: " + _why_missing(path, gap)))
                    continue
                history = [item for k in range(n) for item in _step_history(t, k, path.steps[k])]
                key = canonical_json([message for message, _ in history])
                groups.setdefault(key, (history, []))[1].append(path)
            for h, (history, members) in enumerate(groups.values()):
                request = _request(case, f"{case.id}:t{t}:s{n}:h{h}", t, n, base + history, turn_context)
                requests.append(request)
                expected[request.id] = tuple(Oracle(p.id, p.preferred, t, n, p.steps[n].expect) for p in members)
        preferred = turn.preferred
        gap = _missing_evidence(preferred, len(preferred.steps))
        if gap is not None:
            carry_failure = f"not replayable: turn {t} carries its preferred path forward, and " + _why_missing(
                preferred, gap
            )
            continue
        prefix = base + [item for k, step in enumerate(preferred.steps) for item in _step_history(t, k, step)]

    return ExecutionPlan(
        case_id=case.id, requests=tuple(requests), expected=MappingProxyType(expected), skipped=tuple(skipped)
    )


def _request(
    case: ReplayCase,
    request_id: str,
    turn: int,
    step: int,
    items: list[tuple[dict[str, Any], HistoryEntry]],
    context: Mapping[str, Any],
) -> ReplayRequest:
    # Entries are built with a placeholder index; here each learns its position in this request.
    history = [
        replace(entry, message_index=index)
        for index, (_, entry) in enumerate(items)
        if entry.kind not in ("system", "user")
    ]
    return ReplayRequest(
        id=request_id,
        case_id=case.id,
        turn=turn,
        step=step,
        messages=tuple(freeze(message) for message, _ in items),
        tools=case.tools,
        context=context,
        history=tuple(history),
    )
