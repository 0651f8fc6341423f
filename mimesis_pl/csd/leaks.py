"""Leak checks: coaching notes must not carry a task's hidden values, agent requests no privileged text.

Prompt instructions alone do not keep a coach from writing the answer into its note
(docs/decisions.md A5), so every note is checked programmatically against the task's hidden values that the agent has
not yet seen. Matching works on normalised tokens: lower case, punctuation ignored, numbers compared
by value (``17.0`` = ``17``, ``1,000`` = ``1000``), words reduced by the shared light stemmer so that
simple plurals and verb forms meet (``violins`` = ``violin``). A value matches when its tokens occur
consecutively in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mimesis_pl.envs.text import STOPWORDS, VAGUE_STEMS, stem

#: Hidden fields that are bookkeeping, not secrets (gym name, row ids, split).
DEFAULT_SKIP_KEYS = frozenset({"env_name", "style", "data_source", "split", "index", "id", "need_tools_kwargs"})

#: Leaves of at most this many words are also kept whole, as a phrase value.
MAX_PHRASE_WORDS = 6

# Everyday words that carry no secret on their own, plus the vocabulary coaching notes are written
# in. A word listed here is never a hidden value by itself (it still counts inside a whole phrase);
# the scripted coach writes only such words, which is why its notes cannot trip the check.
COMMON_WORDS: frozenset[str] = frozenset(
    """
    able about above according across action actions actual actually added again against ahead agent aimed
    already always another answer answered answering answers anyone anything approach around asked asking
    aspect aspects attribute attributes avoid based basic before begin behind being best better between
    beyond both brief broad build building came cannot case cases cause certain change check choice choose
    claim clarify clear clearly close come committing common concern concerns concrete confirm confirmed
    consider could current detail details different direction directly does doing done during each early
    earlier either else enough every everything exact example fact facts fair first focus focused follow
    following form found from further gave general give given goal goals going good guess guessed guessing
    guesses have having help here hold holds idea ideas instead into just keep kind know known last later
    least left less let like likely little long look made main make many matter matters maybe mean means
    might more most move moves much must name named narrow narrower narrowing narrows need needed needs
    never next none nothing note notice number often once only open other part partly particular person
    personal point points possible present probably question questions quite rather reach reaction reason
    reasons reply replied replies respond response rested rests right ruled same says second seem seems
    should show side since single situation situations some something specific state stated still such sure
    take tell than that their them then there these thing things think this those though thought through
    told toward tried true turn turns unclear under until user users using very voiced want wanted wants
    well were what when where whether which while whole will wish wishes with within without word words work
    would wrong yes your address agreed assumes expect goes head message mind nobody partial pull repeating
    search served simple table together tying unless usable
    """.split()  # noqa: SIM905 - a word list reads best as text
)
COMMON_STEMS: frozenset[str] = frozenset(stem(w) for w in COMMON_WORDS)

# Every history is tokenised once per coached turn; the vocabulary is small, so stems are cached.
_stem = lru_cache(maxsize=262_144)(stem)

_TOKEN = re.compile(r"-?\d+(?:[.,]\d+)*|[a-z]+")


def tokens(text: str) -> list[str]:
    """Normalised tokens of ``text``: stemmed lower-case words and numbers written by value."""
    text = str(text).lower().replace("\u2019", "'").replace("_", " ")
    text = re.sub(r"'s\b", "", text)
    out = []
    for tok in _TOKEN.findall(text):
        if tok[0].isdigit() or tok[0] == "-":
            out.append(_number(tok))
        else:
            out.append(_stem(tok))
    return out


def _number(tok: str) -> str:
    plain = tok.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", tok) else tok.replace(",", ".")
    try:
        value = float(plain)
    except ValueError:
        return tok
    return str(int(value)) if value == int(value) else repr(value)


@lru_cache(maxsize=262_144)
def is_specific(word: str) -> bool:
    """Whether one word is specific enough to count as a hidden value on its own.

    Numbers count from two digits; words from four letters, unless they are function words, vague
    words or everyday words (:data:`COMMON_WORDS`).
    """
    w = word.lower()
    digits = re.sub(r"\D", "", w)
    if digits and re.fullmatch(r"-?[\d.,]+", w):
        return len(digits.lstrip("0")) >= 2
    if not w.isalpha() or len(w) < 4 or w in STOPWORDS:
        return False
    s = stem(w)
    return s not in VAGUE_STEMS and s not in COMMON_STEMS and w not in COMMON_WORDS


def _leaves(value: Any, skip_keys: frozenset[str]) -> Iterable[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if str(key) not in skip_keys:
                yield from _leaves(item, skip_keys)
    elif isinstance(value, str):
        if value.strip():
            yield value.strip()
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield str(value)
    elif isinstance(value, Sequence | set | frozenset):
        for item in value:
            yield from _leaves(item, skip_keys)


def candidate_values(
    task_hidden: Mapping[str, Any],
    *,
    skip_keys: Iterable[str] = DEFAULT_SKIP_KEYS,
    max_phrase_words: int = MAX_PHRASE_WORDS,
) -> list[str]:
    """Every hidden value of a task, before dropping those already public (see :func:`hidden_values`)."""
    skip = frozenset(skip_keys)
    seen: set[tuple[str, ...]] = set()
    out: list[str] = []

    def add(value: str) -> None:
        key = value_tokens(value)
        if key and key not in seen:
            seen.add(key)
            out.append(value)

    for leaf in _leaves(task_hidden, skip):
        raw_words = re.findall(r"-?\d+(?:[.,]\d+)*|[A-Za-z]+", leaf.replace("_", " "))
        whole_number = bool(re.fullmatch(r"-?\d+(?:[.,]\d+)*", leaf))
        if whole_number or (1 < len(raw_words) <= max_phrase_words):
            add(leaf.replace("_", " "))
        for word in raw_words:
            if is_specific(word):
                add(word)
    return out


def hidden_values(
    task_hidden: Mapping[str, Any],
    *,
    public_text: str = "",
    skip_keys: Iterable[str] = DEFAULT_SKIP_KEYS,
    max_phrase_words: int = MAX_PHRASE_WORDS,
) -> list[str]:
    """The strings a note must not contain, from a task's hidden fields (``GymTask.hidden``).

    Every string or number leaf of the fields (nested mappings and lists included, bookkeeping keys
    in ``skip_keys`` left out) contributes:

    - itself, when it is a number or has at most ``max_phrase_words`` words (a target entity, an
      answer, an exact preference) — a one-word leaf only when that word :func:`is_specific`;
    - each of its specific words and numbers (:func:`is_specific`), so that a long hidden text (a
      story, an argument) is caught piece by piece.

    Values whose tokens already occur in ``public_text`` (what the agent has seen) are dropped: they
    are not secret any more. Order is first appearance; duplicates (after normalisation) are removed.
    """
    values = candidate_values(task_hidden, skip_keys=skip_keys, max_phrase_words=max_phrase_words)
    return unseen_values(values, [public_text])[1]


def unseen_values(values: Sequence[str], texts: Sequence[str]) -> list[list[str]]:
    """For each prefix ``texts[:p]`` (p = 0 … len(texts)), the values that do not occur in it.

    One pass over the texts serves every turn of a conversation: a value stays secret up to the first
    text that contains it (matches never span two texts).
    """
    index: dict[str, list[int]] = {}
    stream: list[str] = []
    bounds = [0]
    for text in texts:
        for tok in tokens(text):
            index.setdefault(tok, []).append(len(stream))
            stream.append(tok)
        index.setdefault("\x00", []).append(len(stream))
        stream.append("\x00")  # a separator no value contains
        bounds.append(len(stream))
    first_end = [_first_end(stream, index, value_tokens(v)) for v in values]
    return [[v for v, end in zip(values, first_end) if end is None or end > bound] for bound in bounds]


def _first_end(stream: Sequence[str], index: Mapping[str, list[int]], needle: tuple[str, ...]) -> int | None:
    n = len(needle)
    for start in index.get(needle[0], ()) if needle else ():
        if tuple(stream[start : start + n]) == needle:
            return start + n
    return None


@lru_cache(maxsize=65536)
def value_tokens(value: str) -> tuple[str, ...]:
    """:func:`tokens` of a value, cached: the same values are checked against many notes."""
    return tuple(tokens(value))


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    if n == 0 or n > len(haystack):
        return False
    first, needle = needle[0], tuple(needle)
    return any(haystack[i] == first and tuple(haystack[i : i + n]) == needle for i in range(len(haystack) - n + 1))


def find_leaks(text: str, values: Iterable[str]) -> list[str]:
    """The values (as given) that occur in ``text`` under the normalisation of the module docstring."""
    toks = tokens(text)
    return [v for v in values if _contains(toks, value_tokens(v))]


@dataclass(frozen=True)
class PrivilegedHit:
    """Privileged text found in an agent request: which message, which privileged text, what matched."""

    message: int
    privileged: int
    excerpt: str


def _message_text(message: Mapping[str, Any]) -> str:
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or ():
        parts.append(str(call))  # arguments are part of what the model reads
    return "\n".join(parts)


def scan_for_privileged(
    messages: Sequence[Mapping[str, Any]],
    privileged_texts: Iterable[str],
    *,
    min_words: int = 8,
    public_texts: Iterable[str] = (),
) -> list[PrivilegedHit]:
    """Find privileged text (e.g. a user's private reasoning) in an agent's request messages.

    A privileged text is found when it occurs whole (whitespace-normalised, case-insensitive) or when
    a run of ``min_words`` of its words occurs in a message and in none of ``public_texts`` (a reply
    may legitimately restate part of the reasoning behind it). Returns one hit per (message, text).
    """
    public_grams: set[tuple[str, ...]] = set()
    for text in public_texts:
        public_grams |= _grams(text, min_words)
    hits = []
    texts = [t for t in privileged_texts if t and t.strip()]
    for i, message in enumerate(messages):
        body = _message_text(message)
        flat = " ".join(body.lower().split())
        for j, secret in enumerate(texts):
            whole = " ".join(secret.lower().split())
            if whole in flat:
                hits.append(PrivilegedHit(i, j, secret[:80]))
                continue
            shared = (_grams(body, min_words) & _grams(secret, min_words)) - public_grams
            if shared:
                hits.append(PrivilegedHit(i, j, " ".join(min(shared))))
    return hits


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    ws = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}
