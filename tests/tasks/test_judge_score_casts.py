"""Issue 33, item 5: judge scores are cast and rounded as the reference casts and rounds them.

The reference, restated: CoSER takes each dimension as ``int(score)`` (1–10), puts it on 0–100 as
``round((s − 1) · 100 / 9, 1)`` and averages the four, / 100; Sotopia takes each dimension as ``int(raw)`` before
normalising it on its range and weighting it (0.5, 1, 1, 0.5, 0.5, 0.5, 2 over 6).
"""

from __future__ import annotations

import pytest

from mimesis_pl.tasks.coser import CoserVerdict, coser_score
from mimesis_pl.tasks.sotopia import DIMENSIONS, SotopiaVerdict, integer_verdict, sotopia_score


def ref_coser(dims: list[float]) -> float:
    return sum(round((int(d) - 1) * 100.0 / 9.0, 1) for d in dims) / len(dims) / 100.0


def ref_sotopia(raw: list[float]) -> float:
    ranges = {"b": (0, 10, 0.5), "r": (-5, 5, 1), "k": (0, 10, 1), "s": (-10, 0, 0.5), "so": (-10, 0, 0.5)}
    ranges |= {"f": (-5, 5, 0.5), "g": (0, 10, 2)}
    total = sum(w * (int(v) - lo) / (hi - lo) for v, (lo, hi, w) in zip(raw, ranges.values()))
    return total / sum(w for _, _, w in ranges.values())


@pytest.mark.parametrize("dims", [[7, 6, 6, 5], [10, 1, 5.5, 5.5], [8, 8, 7, 3], [2, 9, 4, 7]])
def test_coser_rounds_each_dimension_to_a_tenth(dims):
    assert coser_score(CoserVerdict(*dims)) == pytest.approx(ref_coser(dims), abs=1e-12)


def test_coser_hand_worked():
    # 66.666→66.7, 55.555→55.6, 55.6, 44.444→44.4: (66.7 + 55.6 + 55.6 + 44.4) / 400 = 0.55575 (unrounded 0.55556)
    assert coser_score(CoserVerdict(7, 6, 6, 5)) == pytest.approx(0.55575)


@pytest.mark.parametrize(
    "raw",
    [[7.5, 0, 5, 0, 0, 0, 7.5], [10, 5, 10, 0, 0, 5, 10], [3.9, -2.5, 4, -7.2, -1, 1.5, 6]],
)
def test_sotopia_casts_each_dimension_to_an_integer(raw):
    verdict = integer_verdict(SotopiaVerdict(*raw))
    assert sotopia_score(verdict) == pytest.approx(ref_sotopia(raw))
    assert list(DIMENSIONS) == [f for f in SotopiaVerdict.__dataclass_fields__ if f != "SCORE_RANGES"]


def test_sotopia_hand_worked():
    # believability 7.5 → 7: 0.5·0.7 + 1·0.5 + 1·0.5 + 0.5·1 + 0.5·1 + 0.5·0.5 + 2·0.7 = 4.0 → 4.0 / 6 = 0.6667
    assert sotopia_score(integer_verdict(SotopiaVerdict(7.5, 0, 5, 0, 0, 0, 7))) == pytest.approx(4.0 / 6)
