"""A step (or validation pass) whose episodes mostly failed for infrastructure reasons stops the run (A76)."""

from __future__ import annotations

import math

import pytest

from mimesis_pl.rollout.failures import (
    AGENT_FAILURES,
    RolloutFailureError,
    check_failure_share,
    failure_message,
)
from mimesis_pl.rollout.validation import ValidationEpisode, merge_summaries, summarize, validation_metrics


def message(statuses, errors=None, share=0.5):
    errors = errors or [None] * len(statuses)
    return failure_message(
        statuses, errors, failures=AGENT_FAILURES, max_share=share, what="step 3", services="the user simulator at X"
    )


def test_at_most_the_share_passes_and_more_stops():
    assert message(["finished", "user_error"]) is None  # 1 of 2 = 0.5, not more than 0.5
    assert message(["finished", "max_turns", "truncated"]) is None  # the policy's own endings never count
    text = message(["user_error", "user_error", "timeout", "finished"], ["a: boom", None, "b: slow", None])
    assert text.startswith("3 of 4 episodes in step 3 failed (timeout 1, user_error 2), more than max_failed_share=0.5")
    assert "the user simulator at X is likely down" in text
    assert text.endswith("last failure: b: slow")  # the last failed episode with an error text
    assert message([]) is None
    assert message(["user_error"], share=1.0) is None  # 1 never stops


def test_the_quoted_error_never_carries_reasoning():
    text = message(["user_error"], ["user: <think>the word is Paris</think> HTTP 500"])
    assert "Paris" not in text and "[reasoning removed]" in text


def test_check_raises_the_message():
    with pytest.raises(RolloutFailureError, match="2 of 2 episodes"):
        check_failure_share(
            ["env_error", "judge_error"],
            [None, None],
            failures=AGENT_FAILURES,
            max_share=0.5,
            what="step 0",
            services="s",
        )


def record(reward, status="finished", source="a", scored=True):
    return ValidationEpisode(
        data_source=source, reward=reward, success=reward >= 1, turns=2, status=status, scored=scored
    )


def test_validation_leaves_unscored_episodes_out_of_the_means():
    # Before A76 a failed episode counted as reward 0: val/reward would be (1 + 0.5 + 0) / 3 = 0.5.
    records = [record(1.0), record(0.5, source="b"), record(0.0, status="user_error", scored=False)]
    m = validation_metrics(merge_summaries([summarize(records)]))
    assert m["val/reward"] == pytest.approx(0.75)
    assert m["val/core"] == pytest.approx(0.75)  # a: 1.0, b: 0.5
    assert m["val/episodes"] == 2.0 and m["val/unscored"] == 1.0
    assert m["val/status/user_error"] == 1.0 and m["val/status/finished"] == 2.0
    assert m["val/turns_mean"] == 2.0


def test_a_validation_with_no_scored_episode_reports_nan_so_no_best_checkpoint_is_kept():
    from mimesis_pl.rollout.validation import BestCheckpoint

    m = validation_metrics(summarize([record(0.0, status="user_error", scored=False)] * 2))
    assert math.isnan(m["val/reward"]) and math.isnan(m["val/core"])
    assert not BestCheckpoint("val/core").improves(m["val/core"])
