"""The group-signal metric and the one-line-per-step progress printer (hand-worked values)."""

from __future__ import annotations

import io

from mimesis_pl.rollout.progress import (
    RLProgressPrinter,
    format_eta,
    groups_with_signal,
    progress_line,
)
from mimesis_pl.rollout.trajectory import Trajectory
from mimesis_pl.spans import TurnSpan


def traj(group: str, reward: float, status: str = "finished", turns: int = 1) -> Trajectory:
    spans = [TurnSpan(header_start=0, start=1, end=2)] * turns
    t = Trajectory(
        input_ids=[1, 2],
        response_mask=[0, 1],
        prompt_length=1,
        turn_spans=spans,
        turn_rewards=[reward] * turns,
        group_id=group,
        gen_uid=group,
        episode_id=group,
        status=status,
    )
    t.reward = reward
    return t


def test_groups_with_signal_counts_groups_whose_scores_differ():
    batch = [
        traj("a", 0.0),
        traj("a", 0.5),  # spread: signal
        traj("b", 1.0),
        traj("b", 1.0),  # all equal: every advantage is 0
        traj("c", 0.0),
        traj("c", 1.0, "user_error"),  # the failure is masked: one scored member, no signal
        traj("d", 0.2),
        traj("d", 0.2),
        traj("d", 0.3),
    ]
    assert groups_with_signal(batch) == 2 / 4
    assert groups_with_signal([]) == 0.0
    assert groups_with_signal([traj("a", 0.0), traj("a", 0.0, turns=0)]) == 0.0


def test_format_eta():
    assert [format_eta(s) for s in (0, 42.4, 185, 3725)] == ["0s", "42s", "3m05s", "1h02m"]
    assert format_eta(float("nan")) == "?" and format_eta(-1) == "?"


def test_progress_line_shows_what_was_logged():
    line = progress_line(
        3,
        24,
        {
            "rollout/episode_reward_mean": 0.41666,
            "rollout/success_rate": 0.125,
            "rollout/groups_with_signal": 0.5,
            "coach/notes": 6.0,
        },
        3.14,
        65.0,
    )
    assert line == "step  3/24  reward 0.417  success 0.125  signal 0.50  notes 6  3.1s/step  ETA 1m05s"
    assert progress_line(1, -1, {}, 1.0, float("nan")) == "step 1/?  1.0s/step  ETA ?"


class _Trainer:
    is_global_zero = True
    max_steps = 4

    def __init__(self):
        self.global_step = 0
        self.callback_metrics = {}


def test_printer_writes_one_line_per_step():
    import torch

    out, trainer = io.StringIO(), _Trainer()
    printer = RLProgressPrinter(stream=out)
    printer.on_train_start(trainer, None)
    for step in (1, 2):
        trainer.global_step = step
        trainer.callback_metrics = {"rollout/episode_reward_mean": torch.tensor(0.1 * step)}
        printer.on_train_batch_end(trainer, None, None, None, step - 1)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("step 1/4  reward 0.100") and lines[1].startswith("step 2/4  reward 0.200")
    assert "ETA" in lines[1]
