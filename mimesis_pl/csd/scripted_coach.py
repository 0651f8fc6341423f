"""ScriptedCoach: the offline default coach — rules that turn private evidence into a safe note.

It never copies private text. The private material only *steers* which note is written:

- how the user's last reply went (yes / no / partly / could not answer / a statement / a concern
  left open), read from the public reply and the reasoning behind it;
- whether the reasoning holds specifics the conversation has not voiced yet (specific words of the
  reasoning that appear nowhere in the public history);
- which words of the agent's previous move the user's reasoning dwelt on (*anchors*): they come
  from the agent's own public words, never from the reasoning; quoted spans of the reasoning (an
  echo of the question) do not count, and numbers, and any word of a hidden value are dropped;
- how the user reacts to the next turn (prospective) or to turn ``t`` (corrective).

The note is written in the fixed vocabulary of the templates below — everyday words only (see
:data:`mimesis_pl.csd.leaks.COMMON_WORDS`; a test holds it) — plus the anchors, so it names no
hidden entity, number or preference. Without private reasoning it answers ``NONE``: its notes are
hindsight, and a foresight note from the public history alone would be a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from mimesis_pl.csd.coach import DEFAULT_MAX_NOTE_CHARS, CoachResult, finish_note
from mimesis_pl.csd.evidence import first_action
from mimesis_pl.csd.leaks import is_specific, tokens, value_tokens
from mimesis_pl.csd.prompts import CoachRequest
from mimesis_pl.envs.text import QUESTION_FILLER, stem

_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<!\w)'[^']*'(?!\w)")

# Reply classes, checked in this order on the start of the reply (then anywhere for the phrases).
_I = re.IGNORECASE
_UNCLEAR = re.compile(r"only answer|can only|more specific|rephrase|not a (?:yes|question)|did not understand", _I)
_OPEN = re.compile(r"not answered|haven't answered|have not addressed|not addressed|still believe|still think", _I)
_YES = re.compile(r"^\W*(?:yes|yeah|correct|right|exactly|indeed)\b|fair point|convinced me", _I)
_NO = re.compile(
    r"^\W*(?:no|nope|not|incorrect|wrong)\b|not persuaded|no particular preference|don't have a particular", _I
)
_PARTLY = re.compile(r"^\W*(?:maybe|partly|partially|somewhat|sort of|in a way)\b", _I)

STATE = {
    "yes": "The user said yes to {about}, and what they have in mind goes beyond that.",
    "no": "The user said no to {about}, so that direction is closed.",
    "partly": "The user said {about} is only partly true, so the detail that matters is still open.",
    "unclear": "The user could not answer the last message as it was put.",
    "open": "The user says a concern is still open after the last move.",
    "statement": "The user answered with a concrete detail, and their thinking holds more than they have said.",
}
HOLDING = {
    True: "They still have specifics in mind that nobody has voiced; ask one focused question that narrows "
    "those down before you commit to an answer.",
    False: "What they have in mind is mostly on the table now; pull it together and respond to it directly.",
}
OPEN_ADVICE = "Take up that concern directly with a new reason instead of repeating earlier points."
# With ``name_open_point``: the concern named in the user's *public* reply (never the private reasoning).
OPEN_POINT_ADVICE = "Take up their point about {point} directly with a new reason instead of repeating earlier points."
_OPEN_POINT = re.compile(r"point about ([^.;!?\n]+)", re.IGNORECASE)
# With ``name_open_aspect`` (CueGym, docs/decisions.md A95): read from the reasoning's "Open: <aspect> (hinted, not
# asked)" / "Open: none" and "Turns left for them: <n>" lines; the user only ever names an aspect it has hinted at.
ASPECT_ADVICE = {
    "ask": "The user has a must about the {aspect} that nobody has asked about yet; ask about the {aspect}.",
    "all": "The user has told you every must; give your answer with all of them.",
    "last": "There is no time for more questions; give your answer with what the user told you.",
}
_OPEN_ASPECT = re.compile(r"\bOpen:\s*(none\b|[a-z]+ \(hinted)", re.IGNORECASE)
_TURNS_LEFT = re.compile(r"Turns left for them:\s*(\d+)", re.IGNORECASE)
NEXT = {
    "yes": "Building on what they have already confirmed is what gets a yes from them next.",
    "no": "A move that assumes too much will be turned down next; check the key point first.",
    "partly": "Expect only a partial yes next unless the move is narrower.",
    "unclear": "Put the next message as one clear, simple question.",
    "open": "Their next reply will still name a concern, so address it head on.",
    "statement": "A direct question about one open detail will get a concrete answer from them.",
}
DID = {  # one line per move of evidence.MOVES
    "answer": "At this turn the agent gave an answer",
    "action": "At this turn the agent asked or said something",
    "search": "At this turn the agent ran a search",
    "none": "At this turn the agent made no usable move",
}
REACTION = {
    "yes": "and the user said yes.",
    "no": "and the user said no.",
    "partly": "and the user agreed only in part.",
    "unclear": "and the user could not answer it.",
    "open": "and the user still named a concern.",
    "statement": "and the user gave a concrete detail.",
    "": "and the user did not reply.",
}
CORRECTIVE_ADVICE = {
    "open": "Taking up the concern the user had named, with a new reason, would have served better.",
    "early": "Answering here was early: the user still had specifics in mind that were never asked about.",
    "unjudged": "An answer here should rest only on what the user had confirmed, since they still had specifics "
    "in mind.",
    "landed": "Tying the answer closely to what the user had confirmed is what made it work.",
    "narrower": "A narrower question about what the user had not yet voiced would have moved things further.",
    "act": "Since the user had said most of what mattered, it was time to act on it.",
    "ask": "Asking the user directly about what they had not voiced would have served better.",
}
TEMPLATES: tuple[str, ...] = (
    *STATE.values(),
    *HOLDING.values(),
    OPEN_ADVICE,
    OPEN_POINT_ADVICE,
    *ASPECT_ADVICE.values(),
    *NEXT.values(),
    *DID.values(),
    *REACTION.values(),
    *CORRECTIVE_ADVICE.values(),
    "what was asked",
)


def classify_reply(text: str) -> str:
    """``yes``/``no``/``partly``/``unclear``/``open``/``statement`` for a user's public reply ("" if none)."""
    text = (text or "").strip()
    if not text:
        return ""
    for label, pattern in (("unclear", _UNCLEAR), ("open", _OPEN), ("yes", _YES), ("no", _NO), ("partly", _PARTLY)):
        if pattern.search(text):
            return label
    return "statement"


def _last(public: Sequence[Mapping[str, Any]], role: str) -> Mapping[str, Any] | None:
    return next((m for m in reversed(public) if m.get("role") == role), None)


def anchors(move: str, reasoning: str, avoid: Sequence[str], limit: int = 3) -> list[str]:
    """Words of the agent's own move that the user's reasoning dwelt on (see the module docstring)."""
    considered = set(tokens(_QUOTED.sub(" ", reasoning)))
    banned = {tok for value in avoid for tok in value_tokens(value)}
    out: list[str] = []
    for word in re.findall(r"[A-Za-z]+", _QUOTED.sub(" ", move)):
        w = word.lower()
        if w in QUESTION_FILLER or not is_specific(w):
            continue
        s = stem(w)
        if s in considered and s not in banned and w not in out:
            out.append(w)
        if len(out) == limit:
            break
    return out


def unvoiced(reasoning: str, public: Sequence[Mapping[str, Any]]) -> int:
    """How many specific words of the reasoning never appear in the public conversation."""
    said = set(tokens(" ".join(str(m.get("content") or "") for m in public)))
    private = {stem(w.lower()) for w in re.findall(r"[A-Za-z]+|\d[\d.,]*", reasoning) if is_specific(w)}
    return len(private - said)


def corrective_advice(did: str, state: str, reaction: str, holding: bool) -> str:
    """Which corrective advice fits: by what the agent did at ``t`` and how the user took it.

    ``reaction == ""`` means no user reply: the turn was judged by the environment (a guess) or
    ended the episode, so the coach does not know how it went and does not call it a mistake.
    """
    if "open" in (state, reaction):
        return "open"
    if did == "answer":
        if reaction in ("yes", "statement"):
            return "landed"
        if not reaction:
            return "unjudged" if holding else "landed"
        return "early" if holding else "landed"
    if did == "action":
        return "narrower" if holding else "act"
    return "ask" if holding else "act"


def open_aspect_advice(reasoning: str) -> str | None:
    """The ``name_open_aspect`` note for a reasoning with an "Open:" line, or ``None`` without one.

    With one turn left the note never says "ask" (the teacher would then favour asking on the answer turn).
    """
    found = _OPEN_ASPECT.search(reasoning)
    if found is None:
        return None
    left = _TURNS_LEFT.search(reasoning)
    aspect = found.group(1).split()[0].lower()
    if aspect == "none":
        return ASPECT_ADVICE["all"]
    if left is not None and int(left.group(1)) <= 1:
        return ASPECT_ADVICE["last"]
    return ASPECT_ADVICE["ask"].format(aspect=aspect)


def _listing(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class ScriptedCoach:
    """Rule-based coach for offline runs and tests (rules in the module docstring).

    Args:
        max_chars: note length cap, as for every coach.
        name_open_point: an open-concern note names the point the user named publicly (PersuadeGym).
        name_open_aspect: where the reasoning has an "Open:" line (CueGym), the note names the open aspect, says
            every must-have is told, or, with one turn left, says to answer (:func:`open_aspect_advice`).
    """

    def __init__(
        self, *, max_chars: int = DEFAULT_MAX_NOTE_CHARS, name_open_point: bool = False, name_open_aspect: bool = False
    ) -> None:
        self.max_chars = max_chars
        self.name_open_point = name_open_point
        self.name_open_aspect = name_open_aspect

    async def note(self, request: CoachRequest) -> CoachResult:
        return finish_note(self.write(request), max_chars=self.max_chars, avoid=request.avoid)

    def write(self, request: CoachRequest) -> str:
        """The note text (or ``NONE``) for ``request``."""
        if not request.reasoning.strip():
            return "NONE"
        aspect_note = open_aspect_advice(request.reasoning) if self.name_open_aspect else None
        if aspect_note is not None:
            return aspect_note
        public = list(request.public)
        previous = _last(public, "assistant")
        seen = _last(public, "tool") if previous is not None else None
        state = classify_reply(str(seen.get("content") or "")) if seen is not None else "statement"
        _, move = first_action(previous)
        about_words = anchors(move, request.reasoning, request.avoid)
        about = f"the point about {_listing(about_words)}" if about_words else "what was asked"
        holding = unvoiced(request.reasoning, public) > 0
        first = STATE[state].format(about=about)
        if request.style == "corrective":
            did, _ = first_action(request.turn_message)
            reaction = classify_reply(request.next_reply)
            advice = CORRECTIVE_ADVICE[corrective_advice(did, state, reaction, holding)]
            return " ".join([first, f"{DID[did]}, {REACTION[reaction]}", advice])
        sentences = [first, self._open_advice(seen) if state == "open" else HOLDING[holding]]
        following = classify_reply(request.next_reply)
        if following:
            sentences.append(NEXT[following])
        return " ".join(sentences)

    def _open_advice(self, seen: Mapping[str, Any] | None) -> str:
        """The advice for an open concern; with ``name_open_point``, naming the point the user named publicly
        (task-specific: another task's note names another point, which a placebo control then lacks)."""
        named = _OPEN_POINT.findall(str(seen.get("content") or "")) if self.name_open_point and seen else []
        # the last point named is the open one: a reply credits the answered point first ("a fair point about …")
        return OPEN_POINT_ADVICE.format(point=named[-1].strip()) if named else OPEN_ADVICE
