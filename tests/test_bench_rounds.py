"""The benchmarks' shared round-robin helper: alternating order and per-round ratio statistics."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from rounds import Rounds, ratio_stats, round_order


def test_rounds_alternate_which_variant_goes_first():
    assert round_order(["a", "b"], 3) == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")]


def test_ratio_stats_are_per_round():
    # rounds: 2/1, 6/2, 3/3 -> ratios 2, 3, 1
    assert ratio_stats([2.0, 6.0, 3.0], [1.0, 2.0, 3.0]) == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="as many values"):
        ratio_stats([1.0], [1.0, 2.0])


def test_rounds_collect_and_compare():
    rounds = Rounds(["hf", "ours"], 2)
    for variant, seconds in zip(rounds, [4.0, 2.0, 3.0, 6.0]):  # order: hf ours | ours hf
        rounds.record(variant, seconds=seconds)
    assert rounds.series("hf", "seconds") == [4.0, 6.0]
    assert rounds.ratio("ours", "hf", "seconds") == (0.5, 0.5, 0.5)
