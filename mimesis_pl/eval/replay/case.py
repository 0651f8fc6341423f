"""The v1 replay test case as immutable objects (a public interface: docs/decisions.md E2).

A case is a conversation the agent under test is replayed through: each turn starts with a user
utterance and may be satisfied by several *paths* (one preferred, others alternative), each a list of
*steps*. A step pairs what the scorer expects (``expect``) with what was recorded when the step was
taken (``observation``), which is the only thing later requests may show the agent.

Build cases with :func:`mimesis_pl.eval.replay.validate.parse_case` (or the loader), not by hand:
the parser checks the cross-field rules that these classes assume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from mimesis_pl.eval.values import thaw

Evidence = Literal["recorded", "none"]


@dataclass(frozen=True)
class ToolExpectation:
    """The step should be exactly one call of ``tool``.

    ``args`` are required exact values for the keys given; ``args_any`` maps a key to the tuple of its
    acceptable values; any other argument fails the match unless ``allow_extra_args``.
    """

    tool: str
    args: Mapping[str, Any]
    args_any: Mapping[str, tuple[Any, ...]]
    allow_extra_args: bool = False

    def pinned_args(self) -> dict[str, Any]:
        """One call that matches: ``args`` plus the *first* listed value of every ``args_any`` key.

        For answering a case (tests, scripted agents); never shown in a request's history (E21).
        """
        pinned = dict(self.args)
        pinned.update({key: values[0] for key, values in self.args_any.items()})
        return pinned

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "args": thaw(self.args),
            "args_any": thaw(self.args_any),
            "allow_extra_args": self.allow_extra_args,
        }


@dataclass(frozen=True)
class FinalExpectation:
    """The step should be a final reply (no tool call) meeting every criterion given.

    ``contains_any``: at least one phrase occurs; ``contains_all``: every phrase occurs (both
    case-insensitive, whitespace-normalised); ``judge``: a rubric an LLM judge must accept. With no
    criterion, any final reply matches.
    """

    contains_any: tuple[str, ...] = ()
    contains_all: tuple[str, ...] = ()
    judge: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "final": True,
            "contains_any": list(self.contains_any),
            "contains_all": list(self.contains_all),
        }
        if self.judge is not None:
            out["judge"] = self.judge
        return out


Expectation = ToolExpectation | FinalExpectation


@dataclass(frozen=True)
class Observation:
    """What was recorded when the step was taken.

    For a tool step: the tool output ``content`` (text) and the arguments the recorded call used
    (``call_args``). For a final step: ``content`` is the recorded reply. Only ``evidence == "recorded"``
    may enter a later request, and a tool step only with its ``call_args``: without them the call in the
    history could only be rebuilt from the expectation (decision E21 in docs/decisions.md).
    """

    evidence: Evidence
    content: str | None = None
    call_args: Mapping[str, Any] | None = None

    @property
    def authoritative(self) -> bool:
        return self.evidence == "recorded" and self.content is not None


@dataclass(frozen=True)
class Step:
    """One decision of the agent inside a turn."""

    expect: Expectation
    observation: Observation | None = None

    @property
    def is_final(self) -> bool:
        return isinstance(self.expect, FinalExpectation)

    @property
    def has_evidence(self) -> bool:
        """Whether this step's messages may enter a later request's history (the call too, for a tool step)."""
        if self.observation is None or not self.observation.authoritative:
            return False
        return self.is_final or self.observation.call_args is not None


@dataclass(frozen=True)
class Path:
    """A sequence of steps that satisfies the turn's intent; exactly one path of a turn is preferred."""

    id: str
    preferred: bool
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Turn:
    """One user utterance and the paths that may answer it; ``context`` overrides the case context."""

    user: str
    paths: tuple[Path, ...]
    context: Mapping[str, Any]

    @property
    def preferred(self) -> Path:
        return next(p for p in self.paths if p.preferred)


@dataclass(frozen=True)
class ReplayCase:
    """A validated, deep-frozen v1 replay case.

    ``tools`` are in the OpenAI chat format ``{"type": "function", "function": {...}}``; ``source`` names
    the file the case came from (for error messages and artifacts).
    """

    id: str
    turns: tuple[Turn, ...]
    tools: tuple[Mapping[str, Any], ...] = ()
    context: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    system: str | None = None
    source: str | None = None

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t["function"]["name"] for t in self.tools)
