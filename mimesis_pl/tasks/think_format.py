"""The think-format gate in one place: strict reasoning split, token floor, truncation.

A trained simulator turn must carry ``<think>reasoning</think>answer`` with at least
``min_think_tokens`` reasoning tokens and must have ended on its own (not cut by the length cap);
on thinking-off rows a turn must not open a think block (logged as ``all/format_correct``). With thinking
on, a failing row keeps its score for evaluation, but its training reward is zeroed (:func:`gated_reward`);
with thinking off the gate never fires, as in the reference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: The reference's two tag conventions, matched exactly as written (lower case): an upper-case ``<THINK>`` is
#: not a reasoning block for the format gate (docs/decisions.md S79).
_TAG_PAIRS = (("<think>", "</think>"), ("<seed:think>", "</seed:think>"))


def has_reference_tag(text: str) -> bool:
    """Whether ``text`` holds an opening or closing tag of either convention, in the reference's exact spelling."""
    return any(tag in text for pair in _TAG_PAIRS for tag in pair)


def split_think_strict(text: str) -> tuple[str | None, str]:
    """``(reasoning, answer)`` of a well-formed completion, else ``(None, "")``: the format gate's splitter.

    Well-formed, for the first convention with a close tag: exactly one close tag; at most one opener, and if
    present the text starts with it (a completion whose opener was pre-filled by the template has none). Tags
    are matched case-sensitively, as in the reference (S79); no close tag at all is malformed.
    """
    for opener, closer in _TAG_PAIRS:
        n_close = text.count(closer)
        if n_close == 0:
            continue
        n_open = text.count(opener)
        if n_close > 1 or n_open > 1:
            return None, ""
        head, _, answer = text.partition(closer)
        if n_open:
            body = head.lstrip()
            if not body.startswith(opener):
                return None, ""
            head = body[len(opener) :]
        return head.strip(), answer.strip()
    return None, ""


def _scrub_patterns() -> tuple[re.Pattern[str], ...]:
    names = ("seed:think", "think")
    flags = re.DOTALL | re.IGNORECASE
    pairs = [re.compile(f"<{n}>.*?</{n}>", flags) for n in names]  # complete blocks
    leading = [re.compile(f"^.*?</{n}>", flags) for n in names]  # a pre-filled opener: up to the first close
    unclosed = [re.compile(f"<{n}>.*$", flags) for n in names]  # cut by the cap: from the opener on
    return (*pairs, *leading, *unclosed)


_SCRUB = _scrub_patterns()


def scrub_reasoning(text: str) -> str:
    """The reference's ``remove_think``: every reasoning shape removed in its order, then stripped.

    Complete blocks first (seed then plain), then everything up to a leading close with no opener, then an
    unclosed opener and all after it. Removed blocks leave no space behind (``"a<think>x</think>b"`` → ``"ab"``),
    as in the reference; unlike it, tags of any case are removed (S79).
    """
    for i, pattern in enumerate(_SCRUB):
        text = pattern.sub("", text, count=1 if 2 <= i < 4 else 0)
    return text.strip()


def _opens_with_tag(text: str) -> bool:
    body = text.lstrip()
    return any(body.startswith(opener) for opener, _ in _TAG_PAIRS)


@dataclass(frozen=True)
class GeneratedTurn:
    """One turn the policy generated: its decoded text (stop id excluded) and whether the cap cut it."""

    text: str
    truncated: bool


@dataclass(frozen=True)
class FormatCheck:
    """Result of :func:`check_think_format`: ``correct`` over all turns, mean reasoning tokens, thinking on/off."""

    correct: bool
    think_tokens: float
    thinking: bool = True  # the gate only fires on rollouts that ran with thinking on


def check_think_format(
    turns: Sequence[GeneratedTurn],
    enable_think: bool,
    count_tokens: Callable[[str], int],
    min_think_tokens: int = 4,
) -> FormatCheck:
    """The reference's ``think_stats`` over the generated (never the injected) turns of one rollout.

    Thinking on: every turn must split strictly with a non-empty answer, reasoning of at least
    ``min_think_tokens`` tokens (``count_tokens``) and no truncation. Thinking off: no turn may
    start with a think opener (as in the reference, truncation is only checked with thinking on).
    A rollout with no generated turn is not format-correct.
    """
    if not turns:
        return FormatCheck(False, 0.0, enable_think)
    correct = True
    lengths: list[int] = []
    for turn in turns:
        if not enable_think:
            if _opens_with_tag(turn.text):
                correct = False
            continue
        reasoning, answer = split_think_strict(turn.text)
        if reasoning is None or not answer:
            correct = False
            continue
        n = count_tokens(reasoning)
        lengths.append(n)
        if turn.truncated or n < min_think_tokens:
            correct = False
    return FormatCheck(correct, sum(lengths) / len(lengths) if lengths else 0.0, enable_think)


def gated_reward(reward: float, check: FormatCheck, *, is_train: bool) -> float:
    """The training reward: zero when thinking was on and the format is wrong; evaluation keeps the score."""
    return 0.0 if is_train and check.thinking and not check.correct else reward


def clean_response(text: str, enable_think: bool) -> str:
    """The reference's cleaning of a generated turn: what scorers, judges and partners are shown.

    Thinking off: every reasoning shape removed (:func:`scrub_reasoning`; a stray block never leaks). Thinking on: the
    strict split's answer; a reply with no think tag at all is read whole without its reasoning (the reference's
    fallback for models whose reasoning never arrives in-band, e.g. every API model: S78) — the gate still zeroes
    its training reward; a tag of the wrong shape (an opener with no close, two blocks) gives ``""``. The
    fallback scrub removes tags of any case, so an upper-case ``<THINK>`` block never reaches a judge
    (where the reference would show it, S79).
    """
    if not enable_think:
        return scrub_reasoning(text)
    reasoning, answer = split_think_strict(text)
    if reasoning is None and not has_reference_tag(text):
        return scrub_reasoning(text)
    return answer
