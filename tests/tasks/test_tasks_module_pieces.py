"""The task-row DataModule's checks and the FoldGRPO experience of SimulatorRL, on hand-made rollouts."""

from __future__ import annotations

import json

import pytest
import torch

from mimesis_pl.data.simulator_rl import read_task_rows
from mimesis_pl.rollout.trajectory import Trajectory
from mimesis_pl.spans import TurnSpan
from mimesis_pl.stages.simulator import fold_experience
from mimesis_pl.tasks import UnknownTaskError
from mimesis_pl.tasks.base import RowError, TaskResult


def test_unknown_data_source_in_a_file_is_an_error_naming_the_row_and_the_known_keys(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"data_source": "hitom", "extra_info": {}})
        + "\n"
        + json.dumps({"data_source": "hitom_v2", "extra_info": {}})
        + "\n"
    )
    with pytest.raises(UnknownTaskError) as err:
        read_task_rows([str(path)])
    assert f"{path}:row1" in str(err.value) and "'hitom_v2'" in str(err.value) and "usersim-behavior" in str(err.value)


def test_a_row_without_extra_info_is_named(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"data_source": "hitom"}) + "\n")
    with pytest.raises(RowError, match="hitom: 1 .*row0: field extra_info must be a dict"):
        read_task_rows([str(path)])


def result(group: str, k: int, reward: float, n_tokens: int = 2) -> TaskResult:
    ids = [1, 2, 3] + [7] * n_tokens
    mask = [0, 0, 0] + [1] * n_tokens
    t = Trajectory(
        input_ids=ids,
        response_mask=mask,
        prompt_length=3,
        turn_spans=[TurnSpan(1, 3, 3 + n_tokens)],
        turn_rewards=[reward],
        group_id=group,
        gen_uid=f"{group}-{k}",
        episode_id="e",
        status="ok",
        rollout_logprobs=[0.0] * len(ids),
        reward=reward,
    )
    return TaskResult("hitom", f"{group}-{k}", "ok", reward, reward, {}, t)


def test_fold_experience_zscores_within_rows_and_zeroes_single_rollout_groups():
    # group a: rewards 1 and 0 → mean 0.5, unbiased std 0.7071 → ±0.7071; group b: one scored rollout → 0 (S19)
    t = fold_experience([result("a", 0, 1.0), result("a", 1, 0.0), result("b", 0, 1.0)], pad_id=0)
    adv = t["advantages"]
    assert adv.shape == (3, 5)
    assert torch.allclose(adv[0], torch.tensor([0, 0, 0, 0.7071, 0.7071]), atol=1e-3)
    assert torch.allclose(adv[1], -adv[0])
    assert torch.count_nonzero(adv[2]) == 0


def test_folded_rows_of_one_rollout_count_once():
    # rollout a-0 yields two rows (same gen_uid): the group statistics see rewards {1, 0}, not {1, 1, 0}
    rows = [result("a", 0, 1.0), result("a", 0, 1.0), result("a", 1, 0.0)]
    adv = fold_experience(rows, pad_id=0)["advantages"]
    assert torch.allclose(adv[:, -1], torch.tensor([0.7071, 0.7071, -0.7071]), atol=1e-3)


def test_extra_trajectories_of_a_rollout_are_trained_and_counted_once():
    # rollout a-0 played two characters (CoSER): two rows with its reward, one vote in the group statistics
    first = result("a", 0, 1.0)
    first.extra_trajectories = [result("a", 0, 1.0, n_tokens=3).trajectory]
    t = fold_experience([first, result("a", 1, 0.0)], pad_id=0)
    assert t["advantages"].shape == (3, 6)
    assert torch.allclose(t["advantages"][:, -1], torch.tensor([0.0, 0.7071, 0.0]), atol=1e-3)  # padded rows end in 0
    assert torch.allclose(t["advantages"].max(dim=1).values, torch.tensor([0.7071, 0.7071, 0.0]), atol=1e-3)
