"""CSD vs GRPO on the identical tiny workload, and teacher-row memory vs the reference's fixed layout.

    python bench/bench_csd.py [--episodes 16] [--steps 3] [--rounds 4] [--seed 0] [--draws 4]

One set of real rollouts (tiny agent, built-in gyms, scripted users) and one set of scripted-coach
notes are made once; then AgentGRPO, AgentCSD (``prefix_cache``) and AgentCSD (``packed``) each run
``--steps`` optimiser steps on that same experience inside a real Lightning Trainer, in alternating
rounds (``rounds.py``). Printed: each variant's per-round median step time, the per-round ratios
CSD / GRPO as min / median / max (goal <= 1.25), and the bytes of teacher rows per trajectory
(real + placebo, packed) against the reference's 2 × 32 × 10368 int32 block.

Sampling is seeded (``--seed``). An untrained toy policy calls the user tool only by chance, so a draw
can leave no turn to coach; the rollout is then drawn again with the next seed, ``--draws`` times at most,
and the seed used is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import time
from pathlib import Path

import lightning.pytorch as pl
import torch
from rounds import Rounds
from transformers import AutoModelForCausalLM, AutoTokenizer

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.csd import ScriptedCoach, coach_batch
from mimesis_pl.data.prompts import GymPromptDataModule, read_prompt_rows
from mimesis_pl.envs import EnvironmentManager, GymTask
from mimesis_pl.modules import AgentCSD, AgentGRPO
from mimesis_pl.modules.settings import CSDSettings, ModelSettings, PPOSettings
from mimesis_pl.rl.placebo import PlaceboPool
from mimesis_pl.rl.teacher import build_teacher_rows, pack_teacher_rows
from mimesis_pl.rollout.coaching import CoachingSettings, CoachStage, note_turn_ids
from mimesis_pl.rollout.engines import HFEngine, SamplingParams
from mimesis_pl.rollout.experience import build_experience
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.rollout.settings import AdvantageSettings
from mimesis_pl.rollout.step import RLStep, TeacherBatch
from mimesis_pl.users.scripted import ScriptedUser

REFERENCE_BYTES = 2 * 32 * 10368 * 4


class FixedStep:
    """A rollout stage that hands the update the same step (experience + teacher rows) every time.

    It honours the rollout stage's interface (``user_shim_url``, ``privileged_source``) as the CSD module
    reads it; ``tests/test_bench_csd.py`` runs this script at toy size so a change there cannot break it unseen.
    """

    user_shim_url: str | None = None  # no shim: in-process scripted users

    def __init__(self, step: RLStep) -> None:
        self.step = step

    def privileged_source(self) -> None:
        return None

    def setup(self, module) -> None:
        pass

    def teardown(self) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state) -> None:
        pass

    def collect(self, module, batch, batch_idx) -> RLStep:
        return copy.copy(self.step)

    def after_batch(self, module, batch_idx) -> None:
        pass


class FixedTeacher(CoachStage):
    """The coach stage, set up as the job's, handing back the step's precomputed teacher rows."""

    def __init__(self, teacher: TeacherBatch) -> None:
        super().__init__(CoachingSettings())
        self.fixed = teacher

    def teacher(self, step, batch, privileged_source, *, global_step: int = 0) -> TeacherBatch:
        return self.fixed


class StepTimer(pl.Callback):
    """Times ``training_step`` (``update(collect())`` on the fixed step)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t0 = 0.0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.times.append(time.perf_counter() - self._t0)


def make_experience(model_path: str, n_episodes: int, seed: int = 0):
    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path)
    rows = read_prompt_rows(["assets/data/gyms/train/*.parquet"], seed=0)[: n_episodes // 2]
    # an untrained toy policy rarely calls the tool: keep its turns going so trajectories get notes to time (A84)
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=4, no_tool_call="continue")
    loop = MultiTurnRollout(HFEngine(model, tok), tok, manager, SamplingParams(max_new_tokens=160), max_length=3072)

    async def run():
        trajs, _ = await loop.run_batch(rows, n_samples=2)
        hidden = [GymTask.from_row(rows[i // 2]).hidden for i in range(len(trajs))]
        notes, counts = await coach_batch(trajs, hidden, None, ScriptedCoach(), k=4)
        return trajs, notes, counts

    trajs, notes, counts = asyncio.run(run())
    exp = build_experience(trajs, AdvantageSettings(), pad_id=tok.pad_token_id)
    renderer = ChatRenderer(tok)

    def render(n):
        return note_turn_ids(renderer, n)  # the job's framing (docs/decisions.md A61)

    pool = PlaceboPool(min_size=1)
    for (i, _), note in notes.items():
        pool.add(note, trajs[i].group_id + "-pool", "other-task")  # a pool of earlier notes
    real, placebo = [], []
    for i in exp.trained:
        t = trajs[i]
        mine = {turn: note for (j, turn), note in notes.items() if j == i}
        real.append(build_teacher_rows(t.input_ids, t.turn_spans, mine, render, len(t.input_ids) + 1024, prompt_len=0))
        drawn = {turn: pool.draw(note, t.group_id, t.task_key) for turn, note in mine.items()}
        placebo.append(
            build_teacher_rows(
                t.input_ids,
                t.turn_spans,
                {k: v for k, v in drawn.items() if v},
                render,
                len(t.input_ids) + 1024,
                prompt_len=0,
            )
        )
    teacher = TeacherBatch(real, placebo, {}, spans=[trajs[i].turn_spans for i in exp.trained])
    return RLStep(experience=exp, teacher=teacher, metrics=dict(exp.metrics)), counts, tok


def run(module, step: RLStep, steps: int) -> list[float]:
    module.rollout_stage = FixedStep(step)
    if isinstance(module, AgentCSD):
        module.coach_stage = FixedTeacher(step.teacher)
    timer = StepTimer()
    data = GymPromptDataModule(files=["assets/data/gyms/train/*.parquet"], batch_size=1)
    trainer = pl.Trainer(
        accelerator="cpu",
        max_steps=steps + 1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[timer],
        use_distributed_sampler=False,
    )
    trainer.fit(module, datamodule=data)
    return timer.times[1:]  # the first step includes optimiser state allocation


def draw_experience(args: argparse.Namespace):
    """The first draw from ``--seed`` on whose trajectories are trained and have notes; exits when none does."""
    for seed in range(args.seed, args.seed + args.draws):
        step, counts, tok = make_experience(args.model, args.episodes, seed)
        if step.experience.trained and any(r.rows for r in step.teacher.real):
            return step, counts, tok, seed
        n = len(step.experience.trained)
        print(f"seed {seed}: {n} trained trajectories, {counts['made']} notes; drawing again")
    raise SystemExit(
        f"--episodes {args.episodes}: no draw of seeds {args.seed}..{args.seed + args.draws - 1} gave a trained "
        "trajectory with a note; nothing to compare (raise --episodes or --draws)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="assets/tiny-agent")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per variant and round (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="sampling seed of the first draw")
    parser.add_argument("--draws", type=int, default=4, help="rollout draws (seed, seed + 1, ...) to find notes")
    args = parser.parse_args(argv)
    step, counts, tok, seed = draw_experience(args)
    exp = step.experience
    kwargs = {
        "policy": ModelSettings(model_path=args.model),
        "ppo": PPOSettings(mini_batch_size=len(exp.trajectories), micro_batch_size=4, log_entropy=False),
    }
    modules = {
        "grpo": lambda: AgentGRPO(**kwargs),
        "csd_prefix_cache": lambda: AgentCSD(**kwargs),
        "csd_packed": lambda: AgentCSD(csd=CSDSettings(teacher_mode="packed"), **kwargs),
    }
    rounds = Rounds(list(modules), args.rounds)
    for variant in rounds:
        rounds.record(variant, step_ms=statistics.median(run(modules[variant](), step, args.steps)) * 1e3)
    n = len(exp.trained)
    real = pack_teacher_rows(step.teacher.real, exp.tensors["input_ids"].shape[1], tok.pad_token_id)
    plac = pack_teacher_rows(step.teacher.placebo, exp.tensors["input_ids"].shape[1], tok.pad_token_id)
    row_bytes = sum(p.input_ids.numel() * 8 * 3 for p in (real, plac))  # ids, attention mask, positions (int64)
    print(
        f"seed {seed}, trajectories {n}, notes {counts['made']}, "
        f"teacher rows {real.input_ids.shape[0]} real + {plac.input_ids.shape[0]} placebo"
    )
    rounds.print_table("step_ms", "{:.1f}")
    rounds.print_ratio("csd_prefix_cache", "grpo", "step_ms")
    rounds.print_ratio("csd_packed", "grpo", "step_ms")
    print(
        f"teacher rows per trajectory: {row_bytes / n / 1e3:8.1f} kB   "
        f"reference fixed block {REFERENCE_BYTES / 1e3:.0f} kB"
        f"   ({REFERENCE_BYTES / (row_bytes / n):.0f}x less)"
    )


if __name__ == "__main__":
    Path("runs").mkdir(exist_ok=True)
    main()
