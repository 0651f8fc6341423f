"""The think-format gate in one place: strict reasoning split, token floor, truncation.

A trained simulator turn must carry ``<think>reasoning</think>answer`` with at least
``min_think_tokens`` reasoning tokens and must have ended on its own (not cut by the length cap);
on thinking-off rows a turn must not open a think block (logged as ``all/format_correct``). With thinking
on, a failing row keeps its score for evaluation, but its training reward is zeroed (:func:`gated_reward`);
with thinking off the gate never fires, as in the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..chat.think import has_think_tag, opens_with_think, remove_think, split_think


def split_think_strict(text: str) -> tuple[str | None, str]:
    """``(reasoning, answer)`` of a well-formed completion, else ``(None, "")``: the shared strict splitter.

    Well-formed: exactly one close tag; at most one opener, and if present the text starts with it (a
    completion whose opener was pre-filled by the template has none).
    """
    return split_think(text, strict=True)


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
            if opens_with_think(turn.text):
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
    """The reference's cleaning of a single-turn answer: the text the ``<answer>`` is read from.

    Thinking off: the lenient split's public part. Thinking on: the strict split's answer; a reply with no
    think tag at all is read whole (the reference's fallback, so an untagged answer is scored — the gate
    still zeroes its training reward); a tag of the wrong shape gives ``""``.
    """
    if not enable_think or not has_think_tag(text):
        return remove_think(text)
    return split_think_strict(text)[1]


def public_text(text: str, enable_think: bool) -> str:
    """What a partner or judge may see of a turn: the strict answer, or ``""`` for a malformed turn.

    Thinking off: the lenient split's public part (a stray block is removed, never leaked). A turn
    with no tag at all under thinking on is malformed (the opener was pre-filled), hence ``""``.
    """
    if not enable_think:
        return split_think(text)[1]
    return split_think_strict(text)[1]
