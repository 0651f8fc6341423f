"""One ``AgentGRPO`` update on a fixed experience of 2 prompts x 2 samples, on 1 or 2 processes.

Run as a script (Lightning relaunches it once per rank):
``python tests/rl/dp_fixed_update.py --devices 2 --out grads.pt``. With 2 processes rank ``r``
gets prompt ``r``'s two trajectories, as ``GymPromptDataModule`` would hand it. The full gradient
of the optimiser step (after data-parallel averaging and clipping) is gathered and saved by rank 0:
gradients, not weights, because Adam's first step is nearly ``lr · sign(g)`` whatever the scale of ``g``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "rollout"))


def trajectories(tok):
    from rollout_fixtures import ScriptedEngine, say, telepathy_row

    from mimesis_pl.envs import EnvironmentManager
    from mimesis_pl.rollout.engines import SamplingParams
    from mimesis_pl.rollout.loop import MultiTurnRollout
    from mimesis_pl.users.scripted import ScriptedUser

    scripts = [  # prompt 0: one success, one failure; prompt 1: a late success and an early one
        ("g0", [say("action", "Is it a fruit?"), say("answer", "Kiwi")]),
        ("g0", [say("answer", "Banana"), say("answer", "Apple")]),
        ("g1", [say("action", "Is it green?"), say("action", "Is it fuzzy?"), say("answer", "Kiwi")]),
        ("g1", [say("answer", "Kiwi")]),
    ]
    out = []
    for k, (group, texts) in enumerate(scripts):
        manager = EnvironmentManager(users=ScriptedUser(), max_turns=3)
        loop = MultiTurnRollout(ScriptedEngine(tok, texts), tok, manager, SamplingParams(max_new_tokens=64))
        out.append(asyncio.run(loop.run_episode(telepathy_row(), group_id=group, gen_uid=f"{group}-{k}")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    update(args.devices, args.out)


def update(devices: int, out: str) -> None:
    """Fit one step on ``devices`` processes and save the optimiser step's full gradient to ``out``."""
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.strategies import ModelParallelStrategy
    from transformers import AutoTokenizer

    from mimesis_pl.data.prompts import GymPromptDataModule
    from mimesis_pl.modules import AgentGRPO
    from mimesis_pl.modules.settings import ModelSettings, OptimSettings, PPOSettings
    from mimesis_pl.rollout.experience import build_experience
    from mimesis_pl.rollout.settings import AdvantageSettings
    from mimesis_pl.rollout.step import RLStep
    from mimesis_pl.stages.agent import RolloutStage

    model_path = str(REPO / "assets" / "tiny-qwen3")
    tok = AutoTokenizer.from_pretrained(model_path)
    trajs = trajectories(tok)

    class FixedRollout(RolloutStage):
        def setup(self, module):
            pass

        def teardown(self):
            pass

        def collect(self, module, batch, batch_idx):
            trainer = module.trainer
            share = len(trajs) // trainer.world_size
            mine = copy.deepcopy(trajs[trainer.global_rank * share : (trainer.global_rank + 1) * share])
            exp = build_experience(mine, AdvantageSettings(), pad_id=tok.pad_token_id)
            return RLStep(experience=exp, metrics=dict(exp.metrics))

    class SaveGradient(pl.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            grads = {}
            for name, p in pl_module.model.named_parameters():
                g = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad  # gathers: every rank
                grads[name.replace("_checkpoint_wrapped_module.", "")] = g.detach().cpu().clone()
            if trainer.is_global_zero:
                torch.save(grads, out)

    strategy = "auto"
    if devices > 1:
        strategy = ModelParallelStrategy(
            data_parallel_size=devices, tensor_parallel_size=1, process_group_backend="gloo"
        )
    module = AgentGRPO(
        policy=ModelSettings(model_path=model_path),
        optim=OptimSettings(lr=1e-3, schedule="constant"),
        ppo=PPOSettings(mini_batch_size=4, micro_batch_size=1),
    )
    module.rollout_stage = FixedRollout(module.rollout_stage.settings, AdvantageSettings())
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy=strategy,
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[SaveGradient()],
        use_distributed_sampler=False,
    )
    data = GymPromptDataModule(files=[str(REPO / "assets/data/gyms/train/*.parquet")], batch_size=2)
    trainer.fit(module, datamodule=data)


if __name__ == "__main__":
    main()
