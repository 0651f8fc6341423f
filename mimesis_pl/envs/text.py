"""Keyword helpers shared by the rule-based judges, the scripted users and the experts.

Every offline rule in the gyms reduces free text to a set of *content keywords*: lower-cased words,
minus function words, reduced by a light suffix-stripping stemmer. One implementation is shared on
purpose: a scripted user and the judge of the same gym must agree on what a question mentions, or a
scripted expert could never reach reward 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Function words and question scaffolding. Our own list; it only needs to be stable, not complete.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all almost also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down during each
    either else even ever every few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how however i if in into is isn it its itself just least let like ll made make many may me
    might mine more most much must mustn my myself neither no nor not now of off often on once one only onto or
    other others otherwise our ours ourselves out over own per perhaps quite rather re really same shall shan
    she should shouldn since so some such than that the their theirs them themselves then there these they this
    those though through thus to too toward towards under until up upon us very via was wasn we were weren what
    whatever when where whether which while who whom whose why will with within without won would wouldn yes
    yet you your yours yourself yourselves s t d m ve
    """.split()
)

# Words a yes/no question wraps around its subject ("is it something associated with X?").
QUESTION_FILLER: frozenset[str] = frozenset(
    """
    anything something thing things kind sort associated associate related relate relation connected
    connect involve involves involved involving part described describe description story hidden entity
    question ask tell know think guess please true case actually exactly somehow
    """.split()
)

_WORD = re.compile(r"[a-z0-9]+")
_CASED_WORD = re.compile(r"[A-Za-z0-9]+(?='s\b)|[A-Za-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NO_UNDOUBLE = frozenset("lsz")

# Words that say little about what a thing is; experts avoid asking about them, the scripted
# persuadee avoids naming them as its concerns.
_VAGUE = """
    known famous commonly common often usually typically found use used using made make makes includes
    including include features feature characterized popular various many several large small major main
    world well first new old part type kind way thing things people person place time times year years
    want wants know knows believe think said says say also even still become becomes get gets give gives
    take takes come comes going good bad great important different number lot lots able need needs
    """


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words, possessive ``'s`` removed."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"'s\b", "", text)
    return _WORD.findall(text)


def stem(word: str) -> str:
    """A deliberately small suffix stripper: ``kills``, ``killed``, ``killing`` → ``kill``.

    Precision matters less than determinism; both sides of every comparison go through it.
    """
    w = word.lower()
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith(("ies", "ied")) and len(w) == 4:  # dies, died → die
        return w[:-1]
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou" and w[-1] not in _NO_UNDOUBLE:
        w = w[:-1]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def content_words(text: str, *, drop: Iterable[str] = ()) -> set[str]:
    """Stems of the non-function words of ``text`` (digits kept, one-letter words dropped)."""
    dropped = set(drop)
    out: set[str] = set()
    for w in words(text):
        if w in STOPWORDS or w in dropped or (len(w) < 2 and not w.isdigit()):
            continue
        s = stem(w)
        if s not in dropped:
            out.add(s)
    return out


def question_keywords(question: str) -> set[str]:
    """Content keywords of a yes/no question, without the scaffolding words around its subject."""
    return content_words(question, drop=QUESTION_FILLER | {stem(w) for w in QUESTION_FILLER})


def surface_forms(text: str) -> dict[str, str]:
    """Map each stem to the first word of ``text`` that produced it (to write readable questions).

    Words are lower-cased unless they are capitalised somewhere other than at a sentence start
    (names such as "African" keep their capital).
    """
    forms: dict[str, str] = {}
    proper: set[str] = set()
    for match in _CASED_WORD.finditer(text.replace("\u2019", "'")):
        token = match.group(0)
        lower = token.lower()
        if lower in STOPWORDS:
            continue
        s = stem(lower)
        forms.setdefault(s, lower)
        before = text[: match.start()].rstrip()
        if token[:1].isupper() and before and before[-1] not in ".!?:\"'":
            proper.add(s)
    return {s: (w[:1].upper() + w[1:] if s in proper else w) for s, w in forms.items()}


def is_vague(word: str) -> bool:
    """Too general to ask or argue about ("found", "commonly", "people", numbers)."""
    w = word.lower()
    return w.isdigit() or stem(w) in VAGUE_STEMS or w.endswith(("ed", "ly"))


VAGUE_STEMS: frozenset[str] = frozenset(stem(w) for w in _VAGUE.split())


def sentences(text: str) -> list[str]:
    """Split prose into sentences at ``.``, ``!`` or ``?`` followed by whitespace."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def overlap_fraction(query: set[str], reference: set[str]) -> float:
    """Share of ``query`` found in ``reference`` (0.0 for an empty query)."""
    if not query:
        return 0.0
    return len(query & reference) / len(query)


def word_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """All runs of ``n`` consecutive lower-cased words (used by leak checks)."""
    ws = words(text)
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}
