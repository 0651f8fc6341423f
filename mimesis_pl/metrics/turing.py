"""Turing evaluation ratings: canonical orientation and the capped reward."""

from __future__ import annotations

TIE = 4


def canonical_rating(raw: int, generated_is_b: bool) -> int:
    """The judge's 1–7 rating turned so that higher = the generated reply looked more human.

    The judge rates which of A/B a human wrote (7 = surely B); so ``raw`` when the generated reply is B,
    else ``8 − raw``. 4 is a tie.
    """
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 7:
        raise ValueError(f"a Turing rating is an int in 1..7, got {raw!r}")
    return raw if generated_is_b else 8 - raw


def turing_reward(rating: int) -> float:
    """``(min(rating, 5) − 1) / 6``: 0 for 1, 0.5 for a tie (4), capped at 2/3 so that "more human than
    the human" earns no more than a clear win."""
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 7:
        raise ValueError(f"a canonical rating is an int in 1..7, got {rating!r}")
    return (min(rating, 5) - 1) / 6
