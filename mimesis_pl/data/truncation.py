"""Length limits for rendered samples: every cut is explicit, counted and reported."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from ..checks import check_choice

Truncation = Literal["error", "left", "right"]
OverLong = Literal["cut", "drop"]


class SampleTooLong(ValueError):
    """A sample exceeds a length limit under ``truncation="error"``."""


@dataclass(frozen=True)
class LengthLimits:
    """Token limits of one SFT sample.

    The *prompt* is everything before the first trained token, the *response* everything from it on.
    An over-long prompt is cut to its last ``max_prompt_length`` tokens (the most recent context) and an
    over-long response to its first ``max_response_length`` tokens under ``left`` and ``right``, and under
    ``error`` too when ``over_long`` is ``cut`` (the reference's role-swap SFT: docs/decisions.md S63);
    with ``over_long: drop`` and ``error`` such a sample raises :class:`SampleTooLong` (a counted skip).
    If the total is then still over ``max_length``, ``left`` keeps the last and ``right`` the first
    ``max_length`` tokens, and ``error`` raises.

    ``over_long`` ``None`` leaves the choice to the stage: role-swap SFT cuts, the other stages drop.
    """

    max_prompt_length: int | None = 16384
    max_response_length: int | None = 8192
    max_length: int | None = 24576
    truncation: Truncation = "error"
    over_long: OverLong | None = None

    def __post_init__(self) -> None:
        check_choice("truncation", self.truncation, ("error", "left", "right"))
        if self.over_long is not None:
            check_choice("over_long", self.over_long, ("cut", "drop"))
        for name in ("max_prompt_length", "max_response_length", "max_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 or null, got {value}")


@dataclass
class TruncationStats:
    """Counts of what the limits did, for logging (``counts`` keys are stable metric names)."""

    counts: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())) or "nothing truncated"


def apply_length_limits(
    input_ids: list[int], loss_mask: list[int], limits: LengthLimits, stats: TruncationStats | None = None, sample=None
) -> tuple[list[int], list[int]]:
    """Return ``(input_ids, loss_mask)`` within ``limits``; record each cut in ``stats``."""
    stats = stats if stats is not None else TruncationStats()
    first = next((i for i, m in enumerate(loss_mask) if m), len(loss_mask))
    prompt_ids, response_ids = input_ids[:first], input_ids[first:]
    prompt_mask, response_mask = loss_mask[:first], loss_mask[first:]

    violations = []
    if limits.max_prompt_length is not None and len(prompt_ids) > limits.max_prompt_length:
        violations.append(f"prompt has {len(prompt_ids)} tokens > max_prompt_length={limits.max_prompt_length}")
    if limits.max_response_length is not None and len(response_ids) > limits.max_response_length:
        violations.append(f"response has {len(response_ids)} tokens > max_response_length={limits.max_response_length}")
    if limits.max_length is not None and len(input_ids) > limits.max_length:
        violations.append(f"sample has {len(input_ids)} tokens > max_length={limits.max_length}")
    if not violations:
        return input_ids, loss_mask
    if limits.truncation == "error" and limits.over_long != "cut":
        raise SampleTooLong(f"sample {sample}: " + "; ".join(violations) + " (set truncation: left|right to cut)")

    cuts: Counter = Counter()
    if limits.max_prompt_length is not None and len(prompt_ids) > limits.max_prompt_length:
        cut = len(prompt_ids) - limits.max_prompt_length
        prompt_ids, prompt_mask = prompt_ids[cut:], prompt_mask[cut:]
        cuts["prompt_truncated"] += 1
    if limits.max_response_length is not None and len(response_ids) > limits.max_response_length:
        response_ids = response_ids[: limits.max_response_length]
        response_mask = response_mask[: limits.max_response_length]
        cuts["response_truncated"] += 1
    ids, mask = prompt_ids + response_ids, prompt_mask + response_mask
    if limits.max_length is not None and len(ids) > limits.max_length:
        if limits.truncation == "error":
            raise SampleTooLong(
                f"sample {sample}: sample has {len(ids)} tokens > max_length={limits.max_length} after cutting "
                "the prompt and the response (set truncation: left|right to cut)"
            )
        if limits.truncation == "left":
            ids, mask = ids[-limits.max_length :], mask[-limits.max_length :]
        else:
            ids, mask = ids[: limits.max_length], mask[: limits.max_length]
        cuts[f"total_truncated_{limits.truncation}"] += 1
    cuts["samples_truncated"] += 1
    stats.counts.update(cuts)  # a sample dropped above leaves the counts untouched
    return ids, mask
