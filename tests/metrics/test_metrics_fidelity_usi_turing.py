"""Golden values of the simulator-fidelity metric functions, worked by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from mimesis_pl.metrics.fidelity import cluster_bootstrap_ci, fidelity_index
from mimesis_pl.metrics.turing import canonical_rating, turing_reward
from mimesis_pl.metrics.usi import dice_sorensen, expected_calibration_error, usi


def test_fidelity_index_hand_worked() -> None:
    # 2 + 5 + 0 = 7 hits over 3 cases x 5 dimensions = 15 -> 100 * 7 / 15 = 46.67
    hits = [[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]]
    assert fidelity_index(hits) == pytest.approx(100 * 7 / 15)
    assert fidelity_index([[1] * 5]) == 100.0
    assert np.isnan(fidelity_index(np.zeros((0, 5))))
    with pytest.raises(ValueError, match=r"\[n_cases, 5\]"):
        fidelity_index([[1, 0, 1]])
    with pytest.raises(ValueError, match="0/1"):
        fidelity_index([[1, 0, 1, 0, 2]])


def test_cluster_bootstrap_resamples_users_not_cases() -> None:
    # user a: two perfect cases (h=10, t=10); user b: one empty case (h=0, t=5).
    # Draws of 2 users: aa -> 20/20 = 1.0 (p=1/4); ab, ba -> 10/15 = 0.667 (p=1/2); bb -> 0/10 = 0 (p=1/4).
    # Both tails hold more than 2.5% of the mass, so the CI is exactly (0, 100).
    hits = [[1] * 5, [1] * 5, [0] * 5]
    assert cluster_bootstrap_ci(hits, ["a", "a", "b"]) == (0.0, 100.0)
    # user a: [1,1,0,0,0] (h=2, t=5); user b: all five (h=5, t=5):
    # aa -> 4/10 = 0.4, ab -> 7/10 = 0.7, bb -> 10/10 = 1.0 -> CI (40, 100).
    lo, hi = cluster_bootstrap_ci([[1, 1, 0, 0, 0], [1] * 5], ["a", "b"])
    assert (lo, hi) == (pytest.approx(40.0), pytest.approx(100.0))
    # One user: every draw is that user -> CI collapses onto the index, 3/5 = 60.
    assert cluster_bootstrap_ci([[1, 1, 1, 0, 0]], ["u"], n_boot=50) == (pytest.approx(60.0), pytest.approx(60.0))
    # Same seed, same CI; users listed in another order give the same clusters.
    a = cluster_bootstrap_ci([[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [0] * 5], ["x", "y", "z"], n_boot=200, seed=7)
    assert a == cluster_bootstrap_ci([[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [0] * 5], ["x", "y", "z"], n_boot=200, seed=7)
    with pytest.raises(ValueError, match="user_ids"):
        cluster_bootstrap_ci([[1] * 5], ["a", "b"])


def test_dice_sorensen_elementwise() -> None:
    # (0,0) -> 1 by definition; (2,2) -> 4/4 = 1; (3,1) -> 2*1/4 = 0.5; (-1,3) -> |.| -> 2*1/4 = 0.5
    out = dice_sorensen([0, 2, 3, -1], [0, 2, 1, 3])
    assert out.tolist() == [1.0, 1.0, 0.5, 0.5]
    with pytest.raises(ValueError, match="shapes"):
        dice_sorensen([1, 2], [1])


def test_expected_calibration_error_over_difficulty_bins() -> None:
    # difficulty 0.1, 0.15 -> bin 0; 0.2 (on an edge: upper bin) -> bin 1; 0.5 -> bin 2; 0.9 -> bin 4.
    # bin 0: sim mean 0.5, human 1.0 -> 2/5 * 0.5 = 0.2; bin 1: 0 vs 1 -> 1/5 * 1 = 0.2;
    # bin 2: 1 vs 0 -> 0.2; bin 4: 1 vs 1 -> 0.  ECE = 0.6
    sim = [1, 0, 1, 1, 0]
    human = [1, 1, 0, 1, 1]
    difficulty = [0.1, 0.15, 0.5, 0.9, 0.2]
    assert expected_calibration_error(sim, human, difficulty) == pytest.approx(0.6)
    # Identical success -> 0; every task in one bin -> |mean difference| = |3/5 - 4/5| = 0.2.
    assert expected_calibration_error(sim, sim, difficulty) == 0.0
    assert expected_calibration_error(sim, human, [0.5] * 5) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="1-D"):
        expected_calibration_error([1], [1, 0], [0.1, 0.2])


def test_usi_with_and_without_the_survey_term() -> None:
    # USI5 = mean(50, 80, 70, 90, 100 * (1 - 0.1) = 90) = 380 / 5 = 76
    assert usi([50, 80, 70, 90], ece=0.1) == pytest.approx(76.0)
    # USI6 adds Eval = 64: (380 + 64) / 6 = 74
    assert usi([50, 80, 70, 90], ece=0.1, eval_score=64) == pytest.approx(74.0)


def test_turing_canonical_rating_and_reward() -> None:
    # The judge's 7 means "B is the human": when the generated reply is B it keeps 7, as A it becomes 8 - 7 = 1.
    assert canonical_rating(7, generated_is_b=True) == 7
    assert canonical_rating(7, generated_is_b=False) == 1
    assert canonical_rating(2, generated_is_b=False) == 6
    assert canonical_rating(4, generated_is_b=False) == 4  # a tie stays a tie
    # (min(s, 5) - 1) / 6: 1 -> 0, 2 -> 1/6, 4 -> 3/6, 5 -> 4/6, 7 -> capped at 4/6
    assert [turing_reward(s) for s in (1, 2, 4, 5, 7)] == pytest.approx([0, 1 / 6, 0.5, 4 / 6, 4 / 6])
    for bad in (0, 8, 3.5, True):
        with pytest.raises(ValueError):
            canonical_rating(bad, True)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            turing_reward(bad)  # type: ignore[arg-type]
