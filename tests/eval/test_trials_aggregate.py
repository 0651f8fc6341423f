"""Aggregation per gym: unscored trials are reported apart and never counted as 0."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from mimesis_pl.eval.trials import (
    RunIdentity,
    SuccessRule,
    TaskRef,
    TrialRecord,
    aggregate_trials,
    success_rule_for,
    trial_matrix,
)
from mimesis_pl.metrics import AvgAtN, PassAtK, PassHatK, RewardStats

IDENTITY = RunIdentity("agent", "rev1", "sim")


def _rec(
    gym: str, task: str, trial: int, reward: float | None, failure: str | None = None, success=None
) -> TrialRecord:
    key = IDENTITY.key(gym, "cfg", task, trial)
    if reward is None:
        return TrialRecord(key=key, status="unscored", failure=failure or "simulator", error="502")
    return TrialRecord(key=key, status="scored", reward=reward, success=success)


RECORDS = [
    # task a: 4 scored, 2 successes
    _rec("function", "a", 0, 1.0),
    _rec("function", "a", 1, 0.0),
    _rec("function", "a", 2, 1.0),
    _rec("function", "a", 3, 0.0),
    # task b: 3 scored (1 success) + 1 unscored
    _rec("function", "b", 0, 0.0),
    _rec("function", "b", 1, None, "judge"),
    _rec("function", "b", 2, 1.0),
    _rec("function", "b", 3, 0.0),
    # task c: only 1 scored trial (0), 3 unscored
    _rec("function", "c", 0, None),
    _rec("function", "c", 1, None),
    _rec("function", "c", 2, 0.0),
    _rec("function", "c", 3, None, "environment"),
]


def test_unscored_trials_are_excluded_not_zero() -> None:
    (s,) = aggregate_trials(RECORDS, n_trials=4, ks=(1, 2)).values()
    assert (s.tasks, s.scored_trials, s.unscored_trials, s.missing_trials) == (3, 8, 4, 0)
    assert s.unscored_by_kind == {"environment": 1, "judge": 1, "simulator": 2}
    # avg@n: a = 2/4, b = 1/3, c = 0/1 -> mean over tasks
    assert s.avg_at_n == pytest.approx(float((Fraction(1, 2) + Fraction(1, 3) + 0) / 3))
    # pass@1 = c/n per task; task c (1 trial) counts for k=1 only.
    assert s.pass_at_k[1] == pytest.approx(float((Fraction(2, 4) + Fraction(1, 3) + 0) / 3))
    # pass@2: a = 1 - C(2,2)/C(4,2) = 5/6; b = 1 - C(2,2)/C(3,2) = 2/3; c has < 2 scored trials.
    assert s.pass_at_k[2] == pytest.approx(float((Fraction(5, 6) + Fraction(2, 3)) / 2))
    # pass^2: a = C(2,2)/C(4,2) = 1/6; b = C(1,2)/C(3,2) = 0.
    assert s.pass_hat_k[2] == pytest.approx(float(Fraction(1, 6) / 2))
    assert s.tasks_below_k == {1: 0, 2: 1}
    assert s.success_rate == pytest.approx(3 / 8)
    assert s.reward["mean"] == pytest.approx(3 / 8) and s.reward["min"] == 0.0 and s.reward["max"] == 1.0


def test_torchmetrics_agree_with_the_aggregation() -> None:
    m = trial_matrix(RECORDS, "function", 4)
    assert m["task_ids"] == ["a", "b", "c"] and m["valid"].sum() == 8
    (s,) = aggregate_trials(RECORDS, n_trials=4, ks=(1, 2)).values()
    for k in (1, 2):
        at, hat = PassAtK(k=k), PassHatK(k=k)
        at.update(m["correct"], m["valid"])
        hat.update(m["correct"], m["valid"])
        assert at.compute().item() == pytest.approx(s.pass_at_k[k], abs=1e-12)
        assert hat.compute().item() == pytest.approx(s.pass_hat_k[k], abs=1e-12)
    avg = AvgAtN()
    avg.update(m["scores"], m["valid"])
    assert avg.compute().item() == pytest.approx(s.avg_at_n, abs=1e-12)
    stats = RewardStats()
    stats.update(m["rewards"], m["valid"])
    assert stats.compute()["std"].item() == pytest.approx(s.reward["std"], abs=1e-12)


def test_missing_tasks_latest_records_and_trial_window() -> None:
    records = [_rec("function", "a", 0, 1.0), _rec("function", "a", 5, 0.0)]  # trial 5 is outside n=2
    tasks = [TaskRef("function", "a", "cfg"), TaskRef("function", "z", "cfg")]
    (s,) = aggregate_trials(records, n_trials=2, tasks=tasks).values()
    assert (s.tasks, s.scored_trials, s.missing_trials, s.avg_at_n) == (2, 1, 3, 1.0)
    with pytest.raises(ValueError, match="every k must be in 1..n_trials=2"):
        aggregate_trials(records, n_trials=2, ks=(3,))


def test_success_rules_bound_scores_and_follow_gym_families() -> None:
    records = [
        _rec("intention", "t", 0, 1.8),
        _rec("intention", "t", 1, 0.6),
        _rec("turtle", "t", 0, 0.99),
        _rec("travel233", "t", 0, 1.0),
        _rec("tau", "t", 0, 0.0, success=True),
    ]
    out = aggregate_trials(records, n_trials=2)
    assert out["intention"].avg_at_n == pytest.approx((1.0 + 0.6) / 2)  # 1.8 is bounded to 1
    assert out["intention"].reward["max"] == 1.8  # raw reward stats keep the raw value
    assert out["turtle"].success_rate == 0.0 and out["travel233"].success_rate == 1.0
    assert out["tau"].success_rate == 1.0  # the trial's own verdict wins
    assert success_rule_for("travel2222") is success_rule_for("travel")
    rule = SuccessRule(threshold=0.5, bounds=None)
    assert rule.score(3.0) == 3.0 and rule.success(0.5)
    custom = aggregate_trials(records, n_trials=2, rules={"turtle": SuccessRule(threshold=0.9)})
    assert custom["turtle"].success_rate == 1.0


def test_mixed_runs_are_refused() -> None:
    other = TrialRecord(
        key=RunIdentity("agent", "rev2", "sim").key("function", "cfg", "a", 0), status="scored", reward=1.0
    )
    with pytest.raises(ValueError, match="several runs"):
        aggregate_trials([RECORDS[0], other], n_trials=1)
    other_cfg = TrialRecord(key=IDENTITY.key("function", "cfg2", "a", 1), status="scored", reward=1.0)
    with pytest.raises(ValueError, match="several gym configurations"):
        aggregate_trials([RECORDS[0], other_cfg], n_trials=2)
    assert torch.is_tensor(trial_matrix([], "function", 2)["scores"])
