"""Deterministic reply rules of the scripted user, one per gym.

Each rule reads the persona the gym wrote (the task's hidden data) and the agent's utterances so far
(the last one is being answered) and returns a public reply plus a private reasoning text that names
the hidden facts it relied on. Rules keep no state: everything is recomputed from the conversation,
so the same rules can sit behind an HTTP endpoint and give identical answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mimesis_pl.envs import intention, persuade, telepathy, turtle
from mimesis_pl.envs.text import content_words, is_vague, question_keywords, sentences, stem, surface_forms, words
from mimesis_pl.users.base import UserReply, UserSimulatorError

Rule = Callable[[Mapping[str, Any], Sequence[str]], UserReply]

_VERDICT_TEXT = {"Yes": "Yes.", "No": "No.", "Maybe": "Maybe, partly."}
_NOT_A_QUESTION = "I can only answer yes-or-no questions."

# Persuasion: how many points an argument is cut into, and how a point counts as answered.
MAX_POINTS = 4
KEYWORDS_PER_POINT = 5
HITS_TO_ANSWER = 3


def _field(persona: Mapping[str, Any], key: str) -> Any:
    value = persona.get(key)
    if value is None:
        raise UserSimulatorError(f"scripted user: persona of {persona.get('gym')!r} lacks field {key!r}")
    return value


def _named(stems: set[str], text: str) -> str:
    forms = surface_forms(text)
    return ", ".join(sorted(forms.get(s, s) for s in stems)) or "nothing I can check"


def telepathy_rule(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    title, description = str(_field(persona, "entity")), str(_field(persona, "description"))
    question = utterances[-1]
    verdict, asked, matched = telepathy.yes_no_for(question, title, description)
    known = f"I am thinking of {title}: {description}."
    if not verdict:
        return UserReply(
            _NOT_A_QUESTION, f"{known} The message asks nothing I can check, so I ask for a yes-or-no question."
        )
    reasoning = (
        f"{known} The question is about {_named(asked, question)}; what I am thinking of matches "
        f"{_named(matched, question) if matched else 'none of that'}, so the answer is {verdict}."
    )
    return UserReply(_VERDICT_TEXT[verdict], reasoning)


def turtle_rule(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    surface, story = str(persona.get("surface", "")), str(_field(persona, "story"))
    question = utterances[-1]
    verdict, asked, matched = turtle.yes_no_for(question, surface, story)
    known = f"The hidden story: {story}"
    if not verdict:
        return UserReply(_NOT_A_QUESTION, f"{known} The message asks nothing I can check against the story.")
    reasoning = (
        f"{known} The question is about {_named(asked, question)}; the story contains "
        f"{_named(matched, question) if matched else 'none of that'}, so I answer {verdict}."
    )
    return UserReply(_VERDICT_TEXT[verdict], reasoning)


def intention_rule(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    task = str(_field(persona, "task"))
    details = list(_field(persona, "details"))
    keysets = intention.detail_keysets(
        task, [(str(d["aspect"]), [str(o) for o in d.get("options", [])]) for d in details]
    )
    covered: set[int] = set()
    for earlier in utterances[:-1]:
        covered.update(intention.covered_details(earlier, keysets, covered))
    new = intention.covered_details(utterances[-1], keysets, covered)
    wishes = "; ".join(f"{d['aspect']}: {d['preference']}" for d in details)
    reasoning = f"My request: {task} What I have in mind but did not say: {wishes}."
    if new:
        answers = " ".join(f"About {_as_mine(details[i]['aspect'])}: {details[i]['preference']}." for i in new)
        told = ", ".join(str(details[i]["aspect"]) for i in new)
        return UserReply(answers, f"{reasoning} This question is about {told}, so I tell them what I want there.")
    if not question_keywords(utterances[-1]):
        return UserReply(
            "Could you ask me something more specific about what I need?",
            f"{reasoning} The message asks nothing concrete.",
        )
    return UserReply(
        "I don't have a particular preference about that.",
        f"{reasoning} The question does not touch any of these details, so I have nothing to add.",
    )


def _as_mine(aspect: str) -> str:
    text = aspect.strip()
    for prefix in ("User's ", "user's ", "The user's ", "the user's "):
        if text.startswith(prefix):
            return "my " + text[len(prefix) :]
    return "the " + text[:1].lower() + text[1:]


def persuasion_points(claim: str, argument: str) -> list[list[str]]:
    """The argument cut into at most four points, each as its ordered keyword stems (claim words excluded)."""
    parts = sentences(argument)
    if not parts:
        return []
    n = min(MAX_POINTS, len(parts))
    size, extra = divmod(len(parts), n)
    groups, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        groups.append(" ".join(parts[start:end]))
        start = end
    used = set(content_words(claim))
    points = []
    for text in groups:
        allowed = content_words(text) - used
        # Long, specific words make the point recognisable; each stem belongs to one point only.
        first: dict[str, tuple[int, int]] = {}
        for i, w in enumerate(words(text)):
            s = stem(w)
            if len(w) >= 4 and w.isalpha() and s in allowed and not is_vague(w) and s not in first:
                first[s] = (-len(w), i)
        ranked = sorted(first, key=first.__getitem__)[:KEYWORDS_PER_POINT]
        used.update(ranked)
        points.append(ranked)
    return [p for p in points if p]


def _answers_point(argument: str, point: Sequence[str]) -> bool:
    return len(content_words(argument) & set(point)) >= min(HITS_TO_ANSWER, len(point))


def persuade_rule(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    claim, argument = str(_field(persona, "claim")), str(_field(persona, "argument"))
    points = persuasion_points(claim, argument)
    forms = surface_forms(argument)
    answered: list[int] = []
    new: list[int] = []
    for turn, text in enumerate(utterances):
        for i, point in enumerate(points):
            if i not in answered and _answers_point(text, point):
                answered.append(i)
                if turn == len(utterances) - 1:
                    new.append(i)
    # Stance index 0 (Strongly Agree) .. 6 (Strongly Disagree) in proportion to the points answered;
    # an argument with no usable reasons has nothing left to defend.
    top = len(persuade.STANCES) - 1
    index = min(top, int(top * len(answered) / len(points) + 0.5)) if points else top
    label = persuade.STANCES[index]
    lines = []
    if new:
        hit = sorted(content_words(utterances[-1]) & set().union(*(points[i] for i in new)))
        lines.append(f"You make a fair point about {_listing([forms.get(s, s) for s in hit[:3]])}.")
    else:
        lines.append("I'm not persuaded by that.")
    remaining = [i for i in range(len(points)) if i not in answered]
    if remaining:
        nxt = [forms.get(s, s) for s in points[remaining[0]][:HITS_TO_ANSWER]]
        lines.append(
            f"I still believe that {_lower_first(claim)}, and you have not answered my point about {_listing(nxt)}."
        )
    else:
        lines.append(f"You have convinced me: I no longer believe that {_lower_first(claim)}.")
    lines.append(persuade.stance_line(label))
    reasoning = (
        f"My position: {claim}. My reasons: {argument} Points answered so far: {len(answered)} of {len(points)}"
        f"{' (new this turn: ' + ', '.join(str(i + 1) for i in new) + ')' if new else ''}, so my stance is {label}."
    )
    return UserReply(" ".join(lines[:-1]) + "\n" + lines[-1], reasoning)


def _listing(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _lower_first(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


RULES: dict[str, Rule] = {
    "TelepathyGym": telepathy_rule,
    "TurtleGym": turtle_rule,
    "IntentionGym": intention_rule,
    "PersuadeGym": persuade_rule,
}
