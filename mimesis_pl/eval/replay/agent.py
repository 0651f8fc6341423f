"""The agent under test, as seen by replay: one request in, one decision out.

:class:`ChatAgent` is the only thing the :class:`~mimesis_pl.eval.replay.executor.ReplayExecutor`
needs; engines plug in by implementing ``decide``. :class:`OpenAIChatAgent` (in ``openai_agent``)
talks to any OpenAI-compatible server; :class:`ScriptedAgent` answers from a script for tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mimesis_pl.chat.think import split_think
from mimesis_pl.chat.tool_calls import ToolCall, ToolCallParseError, parse_tool_calls
from mimesis_pl.eval.replay.plan import ReplayRequest


@dataclass(frozen=True)
class AgentDecision:
    """What the agent did at one step: tool call(s), or a final reply.

    ``text`` is the public reply (reasoning removed); ``raw`` is the output as received, kept for the
    artifacts. ``parse_error`` is set when the agent tried to call a tool but the call could not be
    read: such a decision matches no oracle (it is the agent's failure, not the harness's).
    """

    tool_calls: tuple[ToolCall, ...] = ()
    text: str = ""
    raw: str = ""
    reasoning: str | None = None
    parse_error: str | None = None

    @property
    def is_final(self) -> bool:
        return not self.tool_calls and self.parse_error is None

    @classmethod
    def final(cls, text: str) -> AgentDecision:
        return cls(text=text, raw=text)

    @classmethod
    def call(cls, name: str, arguments: Mapping[str, Any] | None = None) -> AgentDecision:
        return cls(tool_calls=(ToolCall(name=name, arguments=dict(arguments or {})),))

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in self.tool_calls],
            "text": self.text,
            "raw": self.raw,
            "reasoning": self.reasoning,
            "parse_error": self.parse_error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentDecision:
        calls = tuple(
            ToolCall(name=c["name"], arguments=dict(c.get("arguments", {}))) for c in data.get("tool_calls", ())
        )
        return cls(
            tool_calls=calls,
            text=data.get("text", ""),
            raw=data.get("raw", ""),
            reasoning=data.get("reasoning"),
            parse_error=data.get("parse_error"),
        )


def decision_from_text(text: str) -> AgentDecision:
    """Read a decision from raw generated text: ``<think>`` blocks are set aside, then ``<tool_call>``
    blocks (the package's chat format) are parsed from what remains."""
    reasoning, public = split_think(text)
    try:
        calls, rest = parse_tool_calls(public)
    except ToolCallParseError as err:
        return AgentDecision(text=public, raw=text, reasoning=reasoning, parse_error=str(err))
    return AgentDecision(tool_calls=tuple(calls), text=rest, raw=text, reasoning=reasoning)


@runtime_checkable
class ChatAgent(Protocol):
    """An agent under test. ``decide`` is called exactly once per replay request.

    It may raise :class:`~mimesis_pl.failures.InfrastructureFailure` (e.g. the server is down):
    the executor then retries within its policy and reports the request unscored if it keeps failing.
    """

    async def decide(self, request: ReplayRequest) -> AgentDecision: ...


Script = Callable[[ReplayRequest], AgentDecision] | Mapping[str, AgentDecision]


@dataclass
class ScriptedAgent:
    """A :class:`ChatAgent` that answers from ``script`` (a function of the request, or a mapping from
    request id to decision) and records every request it receives in ``calls`` (request ids)."""

    script: Script
    calls: list[str] = field(default_factory=list)

    async def decide(self, request: ReplayRequest) -> AgentDecision:
        self.calls.append(request.id)
        if callable(self.script):
            return self.script(request)
        if request.id not in self.script:
            raise KeyError(f"ScriptedAgent has no decision for request {request.id!r}; scripted: {sorted(self.script)}")
        return self.script[request.id]

    def call_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for request_id in self.calls:
            counts[request_id] = counts.get(request_id, 0) + 1
        return counts
