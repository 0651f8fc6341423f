"""Unbiased pass@k, pass^k and avg@n against hand-worked values."""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest
import torch

from mimesis_pl.metrics import (
    AvgAtN,
    PassAtK,
    PassHatK,
    avg_at_n,
    pass_at_k,
    pass_at_k_fraction,
    pass_hat_k,
    pass_hat_k_fraction,
)

# (n, c, k, pass@k = 1 - C(n-c,k)/C(n,k), pass^k = C(c,k)/C(n,k)), worked by hand.
HAND_WORKED = [
    (5, 2, 1, F(2, 5), F(2, 5)),  # 1 - 3/5;          2/5
    (5, 2, 2, F(7, 10), F(1, 10)),  # 1 - C(3,2)/C(5,2) = 1 - 3/10;  C(2,2)/C(5,2) = 1/10
    (5, 2, 3, F(9, 10), F(0)),  # 1 - C(3,3)/C(5,3) = 1 - 1/10;  C(2,3) = 0
    (5, 2, 4, F(1), F(0)),  # only 3 failures: any 4 include a success
    (10, 3, 5, F(11, 12), F(0)),  # 1 - C(7,5)/C(10,5) = 1 - 21/252
    (10, 7, 3, F(119, 120), F(7, 24)),  # 1 - C(3,3)/C(10,3) = 1 - 1/120;  C(7,3)/C(10,3) = 35/120
    (4, 0, 2, F(0), F(0)),
    (4, 4, 4, F(1), F(1)),
    (1, 1, 1, F(1), F(1)),
]


@pytest.mark.parametrize("n, c, k, at, hat", HAND_WORKED)
def test_exact_estimators_match_hand_worked_values(n, c, k, at, hat) -> None:
    assert pass_at_k_fraction(n, c, k) == at
    assert pass_hat_k_fraction(n, c, k) == hat
    assert pass_at_k(n, c, k) == float(at) and pass_hat_k(n, c, k) == float(hat)


def test_k_equal_1_is_the_success_fraction_and_bounds_are_checked() -> None:
    for n in range(1, 8):
        for c in range(n + 1):
            assert pass_at_k_fraction(n, c, 1) == pass_hat_k_fraction(n, c, 1) == F(c, n)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_hat_k(3, 4, 1)
    with pytest.raises(TypeError, match="k must be an int"):
        pass_at_k(3, 1, 1.0)
    assert avg_at_n([1.0, 0.0, 0.5]) == 0.5
    with pytest.raises(ValueError, match="undefined"):
        avg_at_n([])


def _rows(spec: list[tuple[int, int]], width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Tasks given as (scored trials n, successes c), padded to ``width`` with unscored trials."""
    correct = torch.zeros(len(spec), width, dtype=torch.bool)
    valid = torch.zeros(len(spec), width, dtype=torch.bool)
    for i, (n, c) in enumerate(spec):
        valid[i, :n] = True
        correct[i, :c] = True
        correct[i, n:] = True  # unscored trials marked "correct" must still not count
    return correct, valid


def test_torchmetrics_match_the_exact_values_over_batches() -> None:
    spec = [(n, c) for n, c, *_ in HAND_WORKED]
    correct, valid = _rows(spec, width=12)
    for k in (1, 2, 3, 4):
        at, hat = PassAtK(k=k), PassHatK(k=k)
        # Two update calls (as over two validation batches) give the same as one.
        for rows in (slice(0, 4), slice(4, None)):
            at.update(correct[rows], valid[rows])
            hat.update(correct[rows], valid[rows])
        counted = [(n, c) for n, c in spec if n >= k]
        want_at = sum(pass_at_k_fraction(n, c, k) for n, c in counted) / len(counted)
        want_hat = sum(pass_hat_k_fraction(n, c, k) for n, c in counted) / len(counted)
        assert at.compute().item() == pytest.approx(float(want_at), abs=1e-12)
        assert hat.compute().item() == pytest.approx(float(want_hat), abs=1e-12)
        assert at.tasks_skipped.item() == len(spec) - len(counted) == hat.tasks_skipped.item()


def test_large_n_stays_accurate_and_empty_is_nan() -> None:
    correct, valid = _rows([(100, 3), (64, 60)], width=100)
    at, hat = PassAtK(k=50), PassHatK(k=10)
    at.update(correct, valid)
    hat.update(correct, valid)
    want_at = (pass_at_k_fraction(100, 3, 50) + pass_at_k_fraction(64, 60, 50)) / 2
    want_hat = (pass_hat_k_fraction(100, 3, 10) + pass_hat_k_fraction(64, 60, 10)) / 2
    assert at.compute().item() == pytest.approx(float(want_at), abs=1e-10)
    assert hat.compute().item() == pytest.approx(float(want_hat), abs=1e-10)
    too_few = PassAtK(k=2)
    too_few.update(*_rows([(1, 1)], width=2))  # one scored trial cannot estimate pass@2
    assert math.isnan(too_few.compute().item()) and too_few.tasks_skipped.item() == 1
    with pytest.raises(ValueError, match=r"\[tasks, trials\]"):
        PassAtK().update(torch.ones(3, dtype=torch.bool))


def test_avg_at_n_is_a_macro_mean_over_scored_trials() -> None:
    scores = torch.tensor([[1.0, 0.0, 0.5, 9.0], [0.2, 0.4, 7.0, 7.0], [5.0, 5.0, 5.0, 5.0]])
    valid = torch.tensor([[True, True, True, False], [True, True, False, False], [False] * 4])
    metric = AvgAtN()
    metric.update(scores, valid)
    assert metric.compute().item() == pytest.approx((0.5 + 0.3) / 2)
    assert metric.tasks.item() == 2 and metric.tasks_skipped.item() == 1
