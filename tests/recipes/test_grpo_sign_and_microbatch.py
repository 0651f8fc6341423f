"""Whole-recipe invariants of GRPO on a toy task (fast, CPU, fp32).

- sign: GRPO raises the reward of a trivially learnable task (and a flipped advantage sign lowers it);
- micro-batch invariance: micro-batches of 1, 2 and 4 give the same weights after one update.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from toy_grpo import ToyRollout, run_toy_grpo, target_preference, toy_module

from ..conftest import TINY_MODEL

STEPS = 6


def _fit(sign: float, estimator: str = "trajectory"):
    torch.manual_seed(0)
    module = toy_module(str(TINY_MODEL), lr=3e-3)
    module.configure_model()
    before = target_preference(module.model.eval())
    module.model.train()
    rollout = ToyRollout(seed=0, sign=sign, estimator=estimator)
    run_toy_grpo(module, STEPS, rollout)
    return before, target_preference(module.model.eval()), rollout.rewards


@pytest.mark.parametrize("estimator", ["trajectory", "turn"])
def test_grpo_raises_the_reward_of_a_learnable_task(estimator):
    before, after, rewards = _fit(sign=1.0, estimator=estimator)
    # The expected first-token reward (exact, no sampling noise) must rise clearly ...
    assert after > before + 0.15, (before, after)
    # ... and so must the sampled reward, from the first steps to the last.
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.1, rewards


@pytest.mark.parametrize("sign", [-1.0])
def test_a_flipped_advantage_sign_lowers_it(sign):
    """The control: the same run with the advantages negated unlearns the task (what a sign bug would do)."""
    before, after, _ = _fit(sign=sign)
    assert after < before - 0.15, (before, after)


def _one_update(micro_batch_size: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    # eps = 1: Adam's first step is then ~ lr · g (not lr · sign(g)), so equal gradients mean equal weights
    module = toy_module(str(TINY_MODEL), micro_batch_size=micro_batch_size, lr=1.0, eps=1.0)
    module.configure_model()
    run_toy_grpo(module, 1, ToyRollout(seed=1))
    return {k: v.detach().clone() for k, v in module.model.state_dict().items()}


def test_micro_batch_size_does_not_change_the_update():
    torch.manual_seed(0)
    start = toy_module(str(TINY_MODEL))
    start.configure_model()
    initial = {k: v.detach().clone() for k, v in start.model.state_dict().items()}
    weights = {m: _one_update(m) for m in (1, 2, 4)}
    moved = max((weights[4][k] - initial[k]).abs().max().item() for k in initial)
    assert moved > 1e-4  # the update did something
    for m in (1, 2):
        worst = max((weights[m][k] - weights[4][k]).abs().max().item() for k in initial)
        assert worst < 1e-6 * max(1.0, moved / 1e-3), (m, worst, moved)
