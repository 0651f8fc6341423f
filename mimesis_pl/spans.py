"""Token spans shared by rendering, rollouts, simulator tasks and the RL math (no dependencies)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnSpan:
    """One assistant turn in absolute token coordinates of the student's sequence.

    ``header_start`` is the first token of the turn's assistant header (e.g. ``<|im_start|>assistant\\n``);
    ``[start, end)`` are the tokens the policy generated in that turn.
    """

    header_start: int
    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.header_start <= self.start < self.end:
            raise ValueError(
                f"TurnSpan{(self.header_start, self.start, self.end)} needs 0 ≤ header_start ≤ start < end"
            )
