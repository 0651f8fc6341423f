"""What the coach may know about agent turn ``t``, and which turns get coached.

Alignment rule (docs/decisions.md A3). Agent turn ``t`` is one assistant generation.
Only some turns make the user speak: a question does, while a guess judged by a rule, a search, a
tool error or a turn cut by the length limit does not. A user *reply* is therefore attached to the
agent turn that triggered it, and for turn ``t``:

- ``reasoning_before`` is the private reasoning behind the reply to turn ``t−1`` — the reply the
  agent read just before acting at ``t``. It is empty for ``t = 0`` and whenever turn ``t−1`` made
  no user reply (an older thought is never carried forward: it would describe a state the agent did
  not just see);
- ``reply_after`` is the user's public reply to turn ``t`` ("" when turn ``t`` made none).

Two sources give the replies, through one adapter each:

- the in-process record, ``Trajectory.privileged``: exactly one ``PrivilegedTurn(reply, reasoning)``
  per executed agent turn, ``reply is None`` when the user was not called; a turn with no record
  (cut by the length limit) made no reply;
- the shim, ``ShimClient.privileged(episode_id)``: one entry per user reply, in order, with no
  agent-turn number. Entries are matched to the turns that the in-process record says made a reply,
  in order. Entries with an empty public text are skipped: the gym never showed them (the HTTP user
  retries an empty reply, and the shim stored each attempt). When the record holds the reply's text,
  an entry must carry the same public text (whitespace-normalised); otherwise the following entries
  are searched for it, and if none matches the turn is *misaligned*: it keeps its public reply but
  gets no reasoning — a shifted thought is never used. When the shim has dropped the episode's
  oldest entries (first index > 0), every turn is misaligned. A trajectory without any in-process record
  (rebuilt from logs) is matched by content instead: turn ``t`` takes the next entry whose public
  text begins the tool message that follows turn ``t``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_pl.chat.think import split_think
from mimesis_pl.chat.tool_calls import ToolCallParseError, parse_tool_calls

#: What an agent turn's first tool call can do (its ``choice``); ``none`` when it made no usable move.
MOVES = ("answer", "action", "search", "none")


@dataclass(frozen=True)
class UserTurn:
    """The user's reply to one agent turn: the public text the agent saw and the private reasoning."""

    public: str
    reasoning: str = ""


@dataclass(frozen=True)
class TurnEvidence:
    """The privileged pair of agent turn ``turn`` (see the module docstring)."""

    turn: int
    reasoning_before: str = ""
    reply_after: str = ""

    @property
    def evidenced(self) -> bool:
        """The reply the agent saw before acting carried private reasoning."""
        return bool(self.reasoning_before.strip())

    @property
    def has_reply(self) -> bool:
        return bool(self.reply_after.strip())


@dataclass
class Alignment:
    """Per agent turn, its user reply (``None``: the turn made none), plus how matching went."""

    replies: list[UserTurn | None]
    misaligned: int = 0  # turns whose shim entry could not be found (they get no reasoning)
    unmatched_entries: int = 0  # shim entries that belong to no agent turn (skipped retries, strays)


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _field(record: Any, name: str) -> Any:
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


def assistant_turns(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Message indices of the assistant turns (turn ``t`` is ``messages[assistant_turns(...)[t]]``)."""
    return [i for i, m in enumerate(messages) if m.get("role") == "assistant"]


def num_agent_turns(trajectory: Any) -> int:
    """Turns that can be coached: assistant messages that also have a token span (when spans exist)."""
    n = len(assistant_turns(trajectory.messages))
    spans = getattr(trajectory, "turn_spans", None)
    return min(n, len(spans)) if spans else n


def replies_from_record(trajectory: Any) -> Alignment:
    """Replies from ``Trajectory.privileged`` (objects or mappings with ``reply`` and ``reasoning``)."""
    n = num_agent_turns(trajectory)
    replies: list[UserTurn | None] = [None] * n
    for t, record in enumerate(list(trajectory.privileged)[:n]):
        reply = _field(record, "reply")
        if reply is not None:
            replies[t] = UserTurn(str(reply), str(_field(record, "reasoning") or ""))
    return Alignment(replies)


def replies_from_shim(trajectory: Any, entries: Sequence[Mapping[str, Any]]) -> Alignment:
    """Replies from the shim's entries of this trajectory's episode, aligned as the module docstring says."""
    n = num_agent_turns(trajectory)
    # Empty-public entries were never shown to the agent; their index order is kept for the rest.
    shown = [e for e in sorted(entries, key=lambda e: int(e.get("index", 0))) if _norm(e.get("public"))]
    skipped = len(entries) - len(shown)
    record = list(trajectory.privileged)
    if entries and min(int(e.get("index", 0)) for e in entries) > 0:
        # The shim dropped this episode's oldest entries: which entry answers which turn is unknowable.
        said = [_field(r, "reply") for r in record[:n]] + [None] * max(0, n - len(record))
        replies = [UserTurn(str(s), "") if s is not None else None for s in said]
        return Alignment(replies, misaligned=sum(r is not None for r in replies), unmatched_entries=len(entries))
    if not record and n:
        alignment = _match_by_content(trajectory, shown, n)
    else:
        alignment = _match_by_record(record, shown, n)
    alignment.unmatched_entries += skipped
    return alignment


def _match_by_record(record: Sequence[Any], shown: Sequence[Mapping[str, Any]], n: int) -> Alignment:
    replies: list[UserTurn | None] = [None] * n
    cursor, misaligned, consumed = 0, 0, 0
    for t in range(min(n, len(record))):
        said = _field(record[t], "reply")
        if said is None:
            continue
        found = _next_match(shown, cursor, _norm(said))
        if found is None:
            misaligned += 1
            replies[t] = UserTurn(str(said), "")
            continue
        entry = shown[found]
        replies[t] = UserTurn(str(entry.get("public") or ""), str(entry.get("reasoning") or ""))
        consumed += 1
        cursor = found + 1
    return Alignment(replies, misaligned=misaligned, unmatched_entries=len(shown) - consumed)


def _next_match(shown: Sequence[Mapping[str, Any]], start: int, said: str) -> int | None:
    """Index of the first entry at or after ``start`` whose public text is ``said``.

    An empty ``said`` (a record that kept no text) matches the next entry: order alone decides.
    """
    for j in range(start, len(shown)):
        if not said or _norm(shown[j].get("public")) == said:
            return j
    return None


def _match_by_content(trajectory: Any, shown: Sequence[Mapping[str, Any]], n: int) -> Alignment:
    messages = list(trajectory.messages)
    turns = assistant_turns(messages)[:n]
    replies: list[UserTurn | None] = [None] * n
    cursor = 0
    for t, i in enumerate(turns):
        if cursor >= len(shown):
            break
        after = messages[i + 1] if i + 1 < len(messages) else None
        if after is None or after.get("role") != "tool":
            continue
        entry = shown[cursor]
        if _norm(str(after.get("content", ""))).startswith(_norm(entry.get("public"))):
            replies[t] = UserTurn(str(entry.get("public") or ""), str(entry.get("reasoning") or ""))
            cursor += 1
    return Alignment(replies, unmatched_entries=len(shown) - cursor)


def evidence_from_replies(replies: Sequence[UserTurn | None]) -> list[TurnEvidence]:
    """Turn ``t`` gets the reasoning of reply ``t−1`` and the public text of reply ``t``."""
    out = []
    for t, reply in enumerate(replies):
        before = replies[t - 1] if t >= 1 else None
        out.append(
            TurnEvidence(
                turn=t,
                reasoning_before=before.reasoning if before is not None else "",
                reply_after=reply.public if reply is not None else "",
            )
        )
    return out


def turn_evidence(trajectory: Any, privileged_entries: Sequence[Mapping[str, Any]] | None = None) -> list[TurnEvidence]:
    """Per agent turn, its :class:`TurnEvidence`: from shim entries when given, else the in-process record."""
    return evidence_from_replies(_alignment(trajectory, privileged_entries).replies)


def _alignment(trajectory: Any, entries: Sequence[Mapping[str, Any]] | None) -> Alignment:
    return replies_from_record(trajectory) if entries is None else replies_from_shim(trajectory, entries)


def rank_turns(evidence: Sequence[TurnEvidence], *, require_evidence: bool = True) -> list[int]:
    """Eligible turns in priority order.

    Evidenced turns whose next reply is known come first, then evidenced turns without it, then —
    only when ``require_evidence`` is False — the unevidenced turns ("foresight" notes, docs/decisions.md A34),
    those with a next reply first. Within a class, ascending turn number: deterministic, no sampling.
    """

    def rank(e: TurnEvidence) -> tuple[int, int, int]:
        return (0 if e.evidenced else 1, 0 if e.has_reply else 1, e.turn)

    eligible = [e for e in evidence if e.evidenced or not require_evidence]
    return [e.turn for e in sorted(eligible, key=rank)]


def select_turns(
    trajectory: Any,
    privileged_entries: Sequence[Mapping[str, Any]] | None,
    k: int,
    require_evidence: bool = True,
) -> list[int]:
    """Up to ``k`` turns of one episode to coach, in priority order (see :func:`rank_turns`).

    ``privileged_entries``: the shim's entries of the trajectory's episode, or ``None`` to read the
    in-process ``trajectory.privileged``.
    """
    if k < 0:
        raise ValueError(f"k (turns coached per episode) must be >= 0, got {k}")
    return rank_turns(turn_evidence(trajectory, privileged_entries), require_evidence=require_evidence)[:k]


def lapse_turns(messages: Sequence[Mapping[str, Any]]) -> set[int]:
    """Agent turns ``t ≥ 1`` that restate the opening: their first tool call's content equals turn 0's.

    A lapse wastes the turn (a lapsing expert's habit, `mimesis_pl.envs.expert.LapsingExpert`); the learning
    study splits the CSD teacher gap and gate by it.
    """
    turns = [messages[i] for i in assistant_turns(messages)]
    if not turns:
        return set()
    opening = " ".join(first_action(turns[0])[1].split())
    if not opening:
        return set()
    return {t for t in range(1, len(turns)) if " ".join(first_action(turns[t])[1].split()) == opening}


def first_action(message: Mapping[str, Any] | None) -> tuple[str, str]:
    """``(choice, content)`` of an assistant message's first tool call (``choice`` one of :data:`MOVES`);
    ``("none", "")`` without one."""
    if message is None:
        return "none", ""
    _, public = split_think(str(message.get("content") or ""))
    try:
        calls, _ = parse_tool_calls(public)
    except ToolCallParseError:
        return "none", ""
    if not calls:
        return "none", ""
    choice, content = calls[0].arguments.get("choice"), calls[0].arguments.get("content")
    return (choice if choice in MOVES else "none"), str(content or "")
