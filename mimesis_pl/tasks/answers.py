"""Answer extraction and small scoring functions shared by the single-turn tasks (pure, no I/O)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def extract_answer(text: str) -> str | None:
    """The stripped body of the first ``<answer>…</answer>`` (as the reference reads it); no tag → ``None``."""
    found = _ANSWER.search(text or "")
    return found.group(1).strip() if found else None


def answer_reader(body: str, *, ignore_case: bool = True) -> Callable[[str | None], str | None]:
    """A reader of the first ``<answer>…</answer>`` whose body matches the regex ``body`` (stripped), as the
    reference's ``re.search(r"<answer>BODY</answer>", reply)`` reads it: ``<answer>I would say B</answer>
    <answer>B</answer>`` gives ``B`` with a letter body (docs/decisions.md S84). ``ignore_case=False`` matches the
    tag and the body case-sensitively (AlignX, HumanLLM)."""
    pattern = re.compile(f"<answer>({body})</answer>", re.DOTALL | (re.IGNORECASE if ignore_case else 0))

    def read(text: str | None) -> str | None:
        found = pattern.search(text or "")
        return found.group(1).strip() if found else None

    return read


def letter_reader(letters: str, *, ignore_case: bool = True) -> Callable[[str | None], str | None]:
    """:func:`answer_reader` of a tag holding one of ``letters``, whitespace around it allowed."""
    return answer_reader(rf"\s*[{letters}]\s*", ignore_case=ignore_case)


def bare_letter(answer: str | None, letters: str = "ABCD", *, case_sensitive: bool = False) -> str | None:
    """The letter when the answer is exactly one of ``letters`` (whitespace aside), else ``None``.

    The reference's ``<answer>\\s*([ABCD])\\s*</answer>``: ``"(B)"`` or ``"B."`` is not an answer.
    ``case_sensitive`` (AlignX) also rejects ``"b"``.
    """
    if answer is None:
        return None
    text = answer.strip()
    if len(text) != 1:
        return None
    got = text if case_sensitive else text.upper()
    return got if got in letters else None


def normalize_text(text: str) -> str:
    """FANToM's SQuAD-style normalisation: lower case, articles removed, then punctuation, single spaces.

    Articles go first, as in the reference's FANToM scorer, so ``"the-cat"`` becomes ``"cat"``.
    """
    text = re.sub(r"\b(a|an|the)\b", " ", text.lower())
    text = text.translate(_NO_PUNCTUATION)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 between two strings after :func:`normalize_text`; 0 when either side is empty (as the reference)."""
    pred, ref = normalize_text(prediction).split(), normalize_text(gold).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref or same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def has_word(text: str, word: str) -> bool:
    """``word`` occurs in ``text`` as a whole word (case-insensitive)."""
    return re.search(r"(?<![\w])" + re.escape(word.lower()) + r"(?![\w])", text.lower()) is not None


def option_letters(n: int) -> str:
    """``"ABCD…"``: the first ``n`` capital letters."""
    return string.ascii_uppercase[:n]
