"""Global batch sizes: each rank's share, and the mini-batch plan of a PPO update (hand-worked)."""

from __future__ import annotations

import pytest

from mimesis_pl.data.prompts import GymPromptDataModule, RankShareBatchSampler
from mimesis_pl.scale import per_rank_share, plan_minibatches

from .conftest import REPO


def test_per_rank_share_divides_or_names_the_key():
    assert per_rank_share(64, 16, "data.batch_size") == 4
    assert per_rank_share(64, 1, "data.batch_size") == 64
    with pytest.raises(ValueError, match=r"model.init_args.ppo_mini_batch_size=6 .* 4 processes.* e\.g\. 4 or 8"):
        per_rank_share(6, 4, "model.init_args.ppo_mini_batch_size")
    with pytest.raises(ValueError, match="must be >= 1"):
        per_rank_share(0, 2, "data.batch_size")


def test_plan_keeps_the_number_of_optimiser_steps_whatever_failed():
    # 8 slots (2 prompts x 4 samples) on one rank, 4 trajectories per optimiser step: 2 steps.
    # Slots 1 and 6 failed, so tensor rows are 0->slot0, 1->slot2, 2->slot3, 3->slot4, 4->slot5, 5->slot7.
    plan = plan_minibatches(8, [0, 2, 3, 4, 5, 7], share=4, micro_batch_size=2)
    assert plan == [[[0, 1], [2]], [[3, 4], [5]]]
    # padded (data parallel): every mini-batch has ceil(4 / 2) = 2 micro-batches, empty ones included
    assert plan_minibatches(8, [0, 1, 2, 3], share=4, micro_batch_size=2, pad=True) == [[[0, 1], [2, 3]], [[], []]]
    # a rank whose every trajectory failed still takes both optimiser steps
    assert plan_minibatches(8, [], share=4, micro_batch_size=3, pad=True) == [[[], []], [[], []]]
    # two epochs over 4 slots in mini-batches of 4: two optimiser steps, each over every row
    shuffled = plan_minibatches(4, [0, 1, 2, 3], share=4, micro_batch_size=4, epochs=2, seed=7)
    assert len(shuffled) == 2 and all(sorted(m[0]) == [0, 1, 2, 3] for m in shuffled)


def test_one_and_two_processes_plan_the_same_number_of_steps():
    # global: 4 prompts x 2 samples = 8 trajectories per step, ppo_mini_batch_size 4 -> 2 optimiser steps
    one = plan_minibatches(8, list(range(8)), per_rank_share(4, 1, "m"), micro_batch_size=2)
    two = plan_minibatches(4, list(range(4)), per_rank_share(4, 2, "m"), micro_batch_size=2, pad=True)
    assert len(one) == len(two) == 2
    assert [len(m) for m in one] == [2, 2]  # 4 trajectories per step: 2 micro-batches of 2 on one process
    assert [len(m) for m in two] == [1, 1]  # 2 per rank: 1 micro-batch on each of two


def _rows(world: int, rank: int, batch_size: int) -> list[list[str]]:
    dm = GymPromptDataModule(files=[str(REPO / "assets/data/gyms/train/*.parquet")], batch_size=batch_size)
    dm.setup("fit")
    inner = dm.train_dataloader().batch_sampler.inner
    sampler = RankShareBatchSampler(inner, rank, world)
    return [[dm.train_rows[i]["_source"] for i in batch] for batch in sampler]


def test_ranks_split_each_global_batch_of_prompts():
    one = _rows(1, 0, 4)
    r0, r1 = _rows(2, 0, 4), _rows(2, 1, 4)
    assert len(one) == len(r0) == len(r1) == 10  # 40 prompts / 4 per step, whatever the number of processes
    assert [a + b for a, b in zip(r0, r1)] == one
    assert all(len(b) == 2 for b in r0 + r1)


def test_a_global_batch_that_does_not_divide_is_refused():
    dm = GymPromptDataModule(files=[str(REPO / "assets/data/gyms/train/*.parquet")], batch_size=3)
    dm.setup("fit")

    class Trainer:
        global_rank, world_size = 0, 2

    dm.trainer = Trainer()
    with pytest.raises(ValueError, match="data.init_args.batch_size=3"):
        dm.train_dataloader()
