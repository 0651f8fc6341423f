"""What the coach is asked: the public history, the privileged pair, and the two prompt styles.

Styles (the reference's two; the prose here is our own):

- ``prospective`` — the coach does not see the agent's turn ``t``; it briefs the agent on what to
  consider before acting, from the history, the user's private reasoning behind the last reply and
  the user's reply to turn ``t``;
- ``corrective`` — the coach also sees what the agent did at ``t`` and says what would have served
  the user better at that turn.

The history shows what the agent *did* (its action and content: its questions and answers live
there: docs/decisions.md A4), not its ``<think>`` scratchpad, which the user never saw and which would crowd
the budget. Each message is cut to ``message_chars`` and the whole history to its last
``history_chars`` characters, whole lines first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mimesis_pl.chat.think import split_think
from mimesis_pl.chat.tool_calls import ToolCallParseError, parse_tool_calls
from mimesis_pl.checks import check_choice
from mimesis_pl.csd.evidence import TurnEvidence, assistant_turns

Style = Literal["prospective", "corrective"]
STYLES: tuple[str, ...] = ("prospective", "corrective")

OMITTED = "[... earlier conversation omitted]"
NO_REASONING = "(No private thoughts were recorded behind this message.)"
NO_REPLY = "(The user did not reply to this turn.)"
_LABELS = {"system": "[setting]", "user": "[task]", "tool": "[environment]"}


@dataclass(frozen=True)
class HistoryLimits:
    """Character budgets of the coach's view of the conversation (the reference's defaults)."""

    message_chars: int = 1500
    history_chars: int = 8000
    turn_chars: int = 4000  # the agent's turn t, corrective style only
    thought_chars: int = 1500  # the agent's own reasoning at turn t, corrective style only

    def __post_init__(self) -> None:
        if self.history_chars < len(OMITTED) + 2 or min(self.message_chars, self.turn_chars, self.thought_chars) < 1:
            raise ValueError(f"HistoryLimits too small: {self}")


DEFAULT_LIMITS = HistoryLimits()


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def describe_assistant(content: str, *, limit: int) -> tuple[str, str]:
    """``(label, text)`` of an assistant turn: what it did, without its reasoning block."""
    _, public = split_think(content or "")
    try:
        calls, prose = parse_tool_calls(public)
    except ToolCallParseError:
        return "[agent, malformed tool call]", clip(public, limit)
    parts = [prose.strip()] if prose.strip() else []
    label = "[agent]"
    if calls:
        call = calls[0]
        choice, body = call.arguments.get("choice"), call.arguments.get("content")
        if isinstance(choice, str) and body is not None:
            label = f"[agent -> {choice}]"
            parts.append(str(body))
        else:
            label = f"[agent -> tool {call.name}]"
            parts.append(str(call.arguments))
        if len(calls) > 1:
            parts.append(f"(+{len(calls) - 1} more tool calls, ignored)")
    return label, clip(" ".join(parts) or "(nothing)", limit)


def render_message(message: Mapping[str, Any], limits: HistoryLimits) -> str:
    role = str(message.get("role", ""))
    content = str(message.get("content") or "")
    if role == "assistant":
        label, text = describe_assistant(content, limit=limits.message_chars)
        return f"{label} {text}"
    return f"{_LABELS.get(role, f'[{role}]')} {clip(content, limits.message_chars)}"


def render_history(messages: Sequence[Mapping[str, Any]], limits: HistoryLimits = DEFAULT_LIMITS) -> str:
    """The public conversation as one text of at most ``limits.history_chars`` characters."""
    text = "\n".join(render_message(m, limits) for m in messages)
    budget = limits.history_chars
    if len(text) <= budget:
        return text
    tail = text[-(budget - len(OMITTED) - 1) :]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]  # start on a whole line when one is left
    return f"{OMITTED}\n{tail}"


def render_agent_turn(content: str, limits: HistoryLimits = DEFAULT_LIMITS) -> str:
    """Turn ``t`` for the corrective coach: what the agent did, then (shorter) its own reasoning."""
    label, text = describe_assistant(content, limit=limits.turn_chars)
    thought, _ = split_think(content or "")
    lines = [f"{label} {text}"]
    if thought:
        lines.append(f"(the agent's reasoning) {clip(thought, limits.thought_chars)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class CoachRequest:
    """Everything a coach may use for one turn.

    ``history``: rendered public conversation before turn ``turn``. ``reasoning``: the user's private
    reasoning behind the last reply the agent saw ("" when none). ``next_reply``: the user's reply to
    turn ``turn`` ("" when none). ``agent_turn``: rendered turn ``turn`` (corrective style only; ""
    in prospective). ``public`` / ``turn_message``: the same, unrendered, for rule-based coaches
    (``turn_message`` is None in prospective). ``avoid``: hidden values the agent has not seen before
    turn ``turn`` — a note containing one is a leak. ``tag``: ``"{episode}:{turn}"`` for logs.
    """

    style: Style
    turn: int
    history: str
    reasoning: str = ""
    next_reply: str = ""
    agent_turn: str = ""
    public: tuple[Mapping[str, Any], ...] = ()
    turn_message: Mapping[str, Any] | None = None
    avoid: tuple[str, ...] = ()
    tag: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice("coach style", self.style, STYLES)

    def messages(self) -> list[dict[str, str]]:
        """The chat messages of an LLM coach: one system message, one user message."""
        return coach_messages(self)


def build_request(
    messages: Sequence[Mapping[str, Any]],
    evidence: TurnEvidence,
    style: Style,
    *,
    limits: HistoryLimits = DEFAULT_LIMITS,
    avoid: Sequence[str] = (),
    tag: str = "",
) -> CoachRequest:
    """The :class:`CoachRequest` for agent turn ``evidence.turn`` of a conversation."""
    turns = assistant_turns(messages)
    if not 0 <= evidence.turn < len(turns):
        raise ValueError(f"turn {evidence.turn} out of range: the conversation has {len(turns)} assistant turns")
    at = turns[evidence.turn]
    before = tuple(messages[:at])
    current = messages[at] if style == "corrective" else None
    return CoachRequest(
        style=style,
        turn=evidence.turn,
        history=render_history(before, limits),
        reasoning=evidence.reasoning_before.strip(),
        next_reply=evidence.reply_after.strip(),
        agent_turn=render_agent_turn(str(current.get("content") or ""), limits) if current is not None else "",
        public=before,
        turn_message=current,
        avoid=tuple(avoid),
        tag=tag,
    )


# --------------------------------------------------------------------------------------- prompt texts
_RULES = """\
Rules:
- Never state or hint at anything that appears only in the private material: names, places, \
numbers, dates, answers, or wishes the user has not said out loud. Say what to find out, never what \
would be found.
- Do not comment on tool use, output format or protocol. If the only problem is of that kind, the \
answer is NONE.
- Be specific to this conversation. Advice that would fit any conversation is worthless.
- If there is nothing useful to say, answer with the single word NONE.
Answer with the note alone: no preamble, no quotes."""

PROSPECTIVE_SYSTEM = f"""\
You coach an AI agent that is learning to help people through conversation. You see the \
conversation up to the moment the agent takes its next turn, and two things the agent cannot see: \
the user's private thoughts behind their latest message, and what the user says after the agent's \
next turn.

Write a short note, at most three sentences, that the agent reads just before it acts. Tell it \
what this user needs from the next turn: the question still open, the detail still unclear, the \
concern nobody has answered. The note will be used to judge a turn you do not see, so it must favour \
a good next turn over a poor one here; it should not describe or judge any earlier turn. Write in \
the present tense.

{_RULES}"""

CORRECTIVE_SYSTEM = f"""\
You review one turn of an AI agent that is learning to help people through conversation. You see \
the conversation before the turn, the turn itself, the user's private thoughts behind the message \
the agent was answering, and how the user reacted to the turn.

Write a short note, at most three sentences, on what would have served this user better at this \
turn: what to ask, clarify or address, given what the user was really after. Ground it in what \
happened in this exchange.

{_RULES}"""

PROSPECTIVE_USER = """\
### Conversation so far
{history}

### The user's private thoughts behind their latest message
{reasoning}

### What the user says after the agent's next turn
{next_reply}

Write the note for the agent's next turn, or NONE."""

CORRECTIVE_USER = """\
### Conversation before the turn
{history}

### The agent's turn
{agent_turn}

### The user's private thoughts behind the message the agent was answering
{reasoning}

### How the user reacted to the turn
{next_reply}

Write the note about this turn, or NONE."""


def coach_messages(request: CoachRequest) -> list[dict[str, str]]:
    """System + user message of ``request``'s style; absent channels are said to be absent."""
    values = {
        "history": request.history or "(the conversation has not started)",
        "reasoning": request.reasoning or NO_REASONING,
        "next_reply": request.next_reply or NO_REPLY,
        "agent_turn": request.agent_turn or "(not shown)",
    }
    if request.style == "prospective":
        system, user = PROSPECTIVE_SYSTEM, PROSPECTIVE_USER
    else:
        system, user = CORRECTIVE_SYSTEM, CORRECTIVE_USER
    return [{"role": "system", "content": system}, {"role": "user", "content": user.format(**values)}]


# -- how a note is shown to the teacher ----------------------------------------------------------------

NoteFraming = Literal["hindsight", "bare"]
NOTE_FRAMINGS: tuple[str, ...] = ("hindsight", "bare")
# The reference introduced every note as hindsight guidance about the user (wording here is our own); the
# placebo control measures the content-free shift of a note *with* this framing (docs/decisions.md A61).
HINDSIGHT_HEADER = "Looking back at this conversation (shown during training only):"
HINDSIGHT_PREAMBLE = "[The following is about what the user needs; let it inform your next message.]"


def frame_note(note: str, framing: NoteFraming = "hindsight") -> str:
    """The text of the user turn a note is spliced in as: framed as hindsight, or the bare note."""
    check_choice("note_framing", framing, NOTE_FRAMINGS)
    if framing == "bare":
        return note
    return f"{HINDSIGHT_HEADER}\n{HINDSIGHT_PREAMBLE}\n{note}"
