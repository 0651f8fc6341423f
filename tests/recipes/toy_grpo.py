"""A trivially learnable GRPO task for recipe tests: after a fixed prompt the policy writes a few
tokens, each one of two (``TARGET`` or ``OTHER``, sampled from the policy renormalised over the
two); the reward is the share of ``TARGET``. Nothing but the sign of the advantage decides whether
the policy's preference for ``TARGET`` goes up or down, so a flipped sign anywhere between reward
and optimiser step makes :func:`run_toy_grpo` lower the reward instead of raising it.

The rollout is a real ``RolloutStage`` subclass: only the episode runner is replaced (no gym),
``build_experience`` (scores, R2G credits or turn returns, group z-scores) and
``AgentGRPO.training_step`` (``update(collect())``: PPO mini/micro-batches, manual optimisation) are the
production code paths.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from mimesis_pl.modules import AgentGRPO
from mimesis_pl.modules.settings import ModelSettings, OptimSettings, PPOSettings
from mimesis_pl.rollout.experience import build_experience
from mimesis_pl.rollout.settings import AdvantageSettings, RolloutSettings
from mimesis_pl.rollout.step import RLStep
from mimesis_pl.rollout.trajectory import Trajectory
from mimesis_pl.spans import TurnSpan
from mimesis_pl.stages.agent import RolloutStage

PROMPT_IDS = [1, 17, 42, 99, 7, 256, 3]
TARGET, OTHER = 300, 301
CHOICES = torch.tensor([TARGET, OTHER])


def target_share(ids: list[int]) -> float:
    return sum(1 for i in ids if i == TARGET) / max(1, len(ids))


@torch.no_grad()
def target_preference(model, prompt_ids: list[int] = PROMPT_IDS) -> float:
    """Exact probability that the first sampled token is ``TARGET`` (the expected first-token reward)."""
    logits = model(input_ids=torch.tensor([prompt_ids])).logits[0, -1].float()
    return float(torch.softmax(logits[CHOICES], -1)[0])


class ToyRollout(RolloutStage):
    """``n_groups`` groups of ``n_samples`` single-turn episodes of 2–4 sampled tokens each (seeded per step)."""

    def __init__(
        self, n_groups: int = 2, n_samples: int = 8, seed: int = 0, sign: float = 1.0, estimator: str = "trajectory"
    ) -> None:
        advantage = AdvantageSettings(estimator=estimator, gamma=0.8, credit="r2g", score="r2g")
        super().__init__(RolloutSettings(), advantage)
        self.n_groups, self.n_samples, self.seed, self.sign = n_groups, n_samples, seed, sign
        self.rewards: list[float] = []

    def setup(self, module) -> None:  # no gyms, users or engines
        pass

    def teardown(self) -> None:
        pass

    @torch.no_grad()
    def sample(self, model, step: int) -> list[Trajectory]:
        gen = torch.Generator().manual_seed(self.seed * 1000 + step)
        trajectories = []
        for g in range(self.n_groups):
            for k in range(self.n_samples):
                ids = list(PROMPT_IDS)
                logprobs = [0.0] * len(ids)
                for _ in range(2 + (k % 3)):  # uneven lengths: token-mean must weigh rows by their tokens
                    logits = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
                    probs = torch.softmax(logits[CHOICES], -1)
                    token = int(CHOICES[torch.multinomial(probs, 1, generator=gen)])
                    ids.append(token)
                    logprobs.append(float(torch.log_softmax(logits, -1)[token]))
                n = len(PROMPT_IDS)
                trajectories.append(
                    Trajectory(
                        input_ids=ids,
                        response_mask=[0] * n + [1] * (len(ids) - n),
                        prompt_length=n,
                        turn_spans=[TurnSpan(header_start=n - 1, start=n, end=len(ids))],
                        turn_rewards=[target_share(ids[n:])],
                        group_id=f"s{step}-g{g}",
                        gen_uid=f"s{step}-g{g}-{k}",
                        episode_id=f"s{step}-g{g}-{k}",
                        status="finished",
                        rollout_logprobs=logprobs,
                    )
                )
        return trajectories

    def collect(self, module, batch, batch_idx: int) -> RLStep:
        was_training = module.model.training
        module.model.eval()
        trajectories = self.sample(module.model, int(module.trainer.global_step))
        module.model.train(was_training)
        exp = build_experience(trajectories, self.advantage, pad_id=0)
        if self.sign != 1.0:  # only for demonstrating that the tests catch a flipped sign
            exp.tensors["advantages"] = exp.tensors["advantages"] * self.sign
        self.rewards.append(exp.metrics["rollout/episode_reward_mean"])
        return RLStep(experience=exp, metrics=dict(exp.metrics))


def toy_module(model_path: str, micro_batch_size: int = 4, lr: float = 3e-3, eps: float = 1e-8) -> AgentGRPO:
    return AgentGRPO(
        policy=ModelSettings(model_path=model_path),
        optim=OptimSettings(lr=lr, weight_decay=0.0, schedule="constant", eps=eps),
        ppo=PPOSettings(mini_batch_size=64, micro_batch_size=micro_batch_size, log_entropy=False),
    )


def run_toy_grpo(module: AgentGRPO, steps: int, rollout: ToyRollout):
    """Fit ``module`` for ``steps`` optimiser steps on the toy task (CPU, fp32, no logger), ``rollout`` its stage."""
    import lightning.pytorch as pl

    module.rollout_stage = rollout
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        precision="32-true",
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
    )
    loader = DataLoader(list(range(steps)), batch_size=1, collate_fn=lambda rows: rows)
    trainer.fit(module, train_dataloaders=loader)
    return trainer
