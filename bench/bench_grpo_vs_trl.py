"""Benchmark one single-turn GRPO step: mimesis-pl (Lightning) against TRL's ``GRPOTrainer``.

Both sides train a fresh copy of the tiny Qwen3 from ``assets/`` on the same chat prompts with
the same n samples per prompt, completion length, temperature (1), learning rate, fp32 weights,
reward (a cheap deterministic function of the completion text), group-normalised advantages,
no KL term, one PPO epoch and one optimiser step over the whole batch.

- mimesis-pl: a real ``lightning.Trainer`` runs ``AgentGRPO``; a small rollout stage samples the n
  completions per prompt through ``HFEngine`` (prompts rendered by ``ChatRenderer``), scores them
  and builds the experience with ``build_experience`` (one ``TurnSpan`` per trajectory).
  ``micro_batch_size`` is the whole batch, as in TRL's single forward.
- TRL: ``GRPOTrainer`` with HF ``generate`` (no vLLM), ``per_device_train_batch_size = prompts × n``
  completions, ``num_iterations=1``, ``gradient_accumulation_steps=1``, ``beta=0``, no gradient
  checkpointing, constant learning rate.

Completions are forced to the full length on both sides by default, so both train on the same
number of tokens: no stop id on ours, ``min_new_tokens`` on TRL's (``--stop-at-eos`` lets both stop
at ``<|im_end|>``; the mean completion lengths are printed either way). A step is the wall time
between the ends of two consecutive optimiser steps, so everything a user waits for counts
(generation, reward, advantages, old log-probs where a side computes them, the update, the
framework's own loop). Each round runs one warm-up step then ``--steps`` timed steps per system,
the order of the systems alternates between rounds so machine noise hits both alike, and the
medians over all timed steps are printed with the ratio ours/TRL (goal ≤ 1.0). Both sides use
``--threads`` torch threads (1 by default: on shared cores two spinning OpenMP threads made single
steps up to 10x slower at random).

    python bench/bench_grpo_vs_trl.py                  # about 40 s on 2 cores
    python bench/bench_grpo_vs_trl.py --rounds 5 --max-new-tokens 64 --n 8
    python bench/bench_grpo_vs_trl.py --stop-at-eos    # natural lengths instead of forced ones
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import lightning.pytorch as pl
import torch
import transformers
from rounds import ratio_stats
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.modules import AgentGRPO
from mimesis_pl.modules.settings import ModelSettings, OptimSettings, PPOSettings
from mimesis_pl.rollout.engines import HFEngine, SamplingParams
from mimesis_pl.rollout.experience import build_experience
from mimesis_pl.rollout.settings import AdvantageSettings, RolloutSettings
from mimesis_pl.rollout.step import RLStep
from mimesis_pl.rollout.trajectory import Trajectory
from mimesis_pl.spans import TurnSpan
from mimesis_pl.stages.agent import RolloutStage

TINY = REPO / "assets" / "tiny-qwen3"
SYSTEM = "You are a helpful support agent. Answer briefly."
TOPICS = [
    "a refund",
    "a table for two",
    "a late train",
    "a broken kettle",
    "a lost parcel",
    "a hotel room",
    "a bill",
    "a password",
]


def make_prompts(count: int) -> list[list[dict[str, str]]]:
    return [
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Hello, I need help with {TOPICS[i % len(TOPICS)]} (case {i})."},
        ]
        for i in range(count)
    ]


def score_text(text: str) -> float:
    """The reward of both sides: how many times the letter ``e`` occurs in the completion text."""
    return float(text.count("e"))


def trl_reward(completions, **kwargs) -> list[float]:
    # Conversational prompts give completions as [{"role": "assistant", "content": text}].
    return [score_text(c[0]["content"] if isinstance(c, list) else c) for c in completions]


class PhaseClock:
    """Wall-clock stamps of step ends and per-step phase durations of one system."""

    def __init__(self) -> None:
        self.step_ends: list[float] = []
        self.in_step: list[float] = []
        self.phases: dict[str, list[float]] = defaultdict(list)
        self.tokens: list[int] = []
        self.widths: list[int] = []
        self._begin = 0.0
        self._pending: dict[str, float] = defaultdict(float)

    def begin(self) -> None:
        self._begin = time.perf_counter()

    def add(self, phase: str, seconds: float) -> None:
        self._pending[phase] += seconds

    def end(self) -> None:
        now = time.perf_counter()
        self.step_ends.append(now)
        self.in_step.append(now - self._begin)
        for phase, seconds in self._pending.items():
            self.phases[phase].append(seconds)
        self._pending = defaultdict(float)

    def mark_round(self) -> None:
        # Intervals never span two rounds: the warm-up step of a round absorbs the set-up of the run.
        self.step_ends.append(float("nan"))


# -- mimesis-pl ----------------------------------------------------------------------------------


class TimedAgentGRPO(AgentGRPO):
    """``AgentGRPO`` whose old-log-prob pass is timed (the rest of the step is the policy update)."""

    clock: PhaseClock | None = None

    def _old_logprobs(self, t):
        start = time.perf_counter()
        out = super()._old_logprobs(t)
        if self.clock is not None:
            self.clock.add("old_logprobs", time.perf_counter() - start)
        return out


class SingleTurnRollout(RolloutStage):
    """Samples ``n`` completions per prompt row with ``HFEngine`` and hands ``AgentGRPO`` the step.

    The experience is built by ``build_experience`` (scores, failure masking, GRPO advantages), so the
    advantages are the ones multi-turn training uses, with one turn.
    """

    def __init__(self, n: int, max_new_tokens: int, stop_at_eos: bool, clock: PhaseClock) -> None:
        super().__init__(RolloutSettings(), AdvantageSettings())  # only its settings; no services start
        self.n = n
        self.max_new_tokens = max_new_tokens
        self.stop_at_eos = stop_at_eos
        self.clock = clock
        self.engine: HFEngine | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def setup(self, module) -> None:
        self.loop = asyncio.new_event_loop()
        self.renderer = ChatRenderer(module.tokenizer)
        stops = (module.tokenizer.eos_token_id,) if self.stop_at_eos else ()
        self.params = SamplingParams(max_new_tokens=self.max_new_tokens, temperature=1.0, stop_token_ids=stops)

    def teardown(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        pending = asyncio.all_tasks(self.loop)  # the engine's micro-batching worker
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    def collect(self, module, batch, batch_idx: int) -> RLStep:
        self.clock.begin()
        start = time.perf_counter()
        trainer = module.trainer
        if self.engine is None:  # the model exists only after configure_model, which runs after setup
            self.engine = HFEngine(module.model, module.tokenizer)
        prompts = [self.renderer.prompt_ids(messages) for messages in batch]

        async def sample():
            return await asyncio.gather(*[self.engine.generate(p, self.params) for p in prompts for _ in range(self.n)])

        results = self.loop.run_until_complete(sample())
        generated = time.perf_counter()
        tokenizer = module.tokenizer
        trajectories = []
        for k, result in enumerate(results):
            prompt = prompts[k // self.n]
            p, c = len(prompt), len(result.token_ids)
            reward = score_text(tokenizer.decode(result.token_ids, skip_special_tokens=True))
            trajectories.append(
                Trajectory(
                    input_ids=prompt + result.token_ids,
                    response_mask=[0] * p + [1] * c,
                    prompt_length=p,
                    turn_spans=[TurnSpan(header_start=p, start=p, end=p + c)],  # header only matters to CSD
                    turn_rewards=[reward],
                    group_id=f"s{trainer.global_step}-p{k // self.n}",
                    gen_uid=f"s{trainer.global_step}-g{k}",
                    episode_id=f"s{trainer.global_step}-e{k}",
                    status="finished",
                    rollout_logprobs=[0.0] * p + list(result.logprobs),
                    finish_reasons=[result.finish_reason],
                )
            )
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        experience = build_experience(trajectories, self.advantage, pad_id=pad)
        done = time.perf_counter()
        self.clock.add("generate", generated - start)
        self.clock.add("reward_adv", done - generated)
        self.clock.tokens.append(sum(len(r.token_ids) for r in results))
        self.clock.widths.append(int(experience.tensors["input_ids"].shape[1]))
        return RLStep(experience=experience, metrics=dict(experience.metrics))

    def after_batch(self, module, batch_idx: int) -> None:
        self.clock.end()


def run_ours(module: TimedAgentGRPO, prompts, args, clock: PhaseClock) -> None:
    module.rollout_stage = SingleTurnRollout(args.n, args.max_new_tokens, args.stop_at_eos, clock)
    steps = 1 + args.steps
    loader = DataLoader(prompts * steps, batch_size=len(prompts), shuffle=False, collate_fn=list)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        precision="32-true",
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    clock.mark_round()
    trainer.fit(module, loader)


# -- TRL -----------------------------------------------------------------------------------------


def build_trl(prompts, args, clock: PhaseClock, output_dir: str):
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    class TimedGRPOTrainer(GRPOTrainer):
        def _generate_single_turn(self, *a, **kw):
            start = time.perf_counter()
            out = super()._generate_single_turn(*a, **kw)
            clock.add("generate", time.perf_counter() - start)
            return out

        def _generate_and_score_completions(self, inputs):
            start = time.perf_counter()
            out = super()._generate_and_score_completions(inputs)
            clock.add("_gen_and_score", time.perf_counter() - start)
            clock.tokens.append(int(out["completion_mask"].sum()))
            clock.widths.append(int(out["prompt_ids"].shape[1] + out["completion_ids"].shape[1]))
            return out

    class Stamps(TrainerCallback):
        def on_step_begin(self, *a, **kw):
            clock.begin()

        def on_step_end(self, *a, **kw):
            clock.end()
            phases = clock.phases  # generation and scoring run inside the step; the rest of it is the update
            phases["reward_adv"].append(phases["_gen_and_score"][-1] - phases["generate"][-1])

    steps = 1 + args.steps
    config = GRPOConfig(
        output_dir=output_dir,
        per_device_train_batch_size=len(prompts) * args.n,  # completions, not prompts
        num_generations=args.n,
        max_completion_length=args.max_new_tokens,
        num_iterations=1,
        gradient_accumulation_steps=1,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        weight_decay=0.0,
        adam_beta1=0.9,
        adam_beta2=0.95,
        max_grad_norm=1.0,
        beta=0.0,
        epsilon=0.2,
        loss_type="dapo",  # token mean over the batch, like AgentGRPO's "token-mean"
        scale_rewards="group",
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        generation_kwargs=None if args.stop_at_eos else {"min_new_tokens": args.max_new_tokens},
        gradient_checkpointing=False,
        bf16=False,
        fp16=False,
        use_cpu=True,
        max_steps=steps,
        logging_steps=10**6,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        shuffle_dataset=False,
        seed=args.seed,
        dataloader_num_workers=0,
    )
    model = AutoModelForCausalLM.from_pretrained(TINY, dtype=torch.float32)
    dataset = Dataset.from_list([{"prompt": p} for p in prompts * steps])
    tokenizer = AutoTokenizer.from_pretrained(TINY)
    trainer = TimedGRPOTrainer(
        model=model,
        reward_funcs=[trl_reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[Stamps()],
    )
    trainer.remove_callback(PrinterCallback)  # it prints the end-of-run summary dict of every round
    return trainer


def run_trl(trainer, clock: PhaseClock) -> None:
    clock.mark_round()
    trainer.train()


# -- report --------------------------------------------------------------------------------------


def intervals(clock: PhaseClock) -> list[float]:
    ends = clock.step_ends
    return [b - a for a, b in itertools.pairwise(ends) if not (math.isnan(a) or math.isnan(b))]  # NaN: a new round


def per_round_step_medians(clock: PhaseClock) -> list[float]:
    """The median step interval of each round (rounds are separated by NaN marks)."""
    medians, current = [], []
    for a, b in itertools.pairwise([*clock.step_ends, float("nan")]):
        if math.isnan(b):
            if current:
                medians.append(statistics.median(current))
            current = []
        elif not math.isnan(a):
            current.append(b - a)
    return medians


def timed_only(values: list[float], per_round: int) -> list[float]:
    """Per-step values without the warm-up step (the first) of every round."""
    return [v for i, v in enumerate(values) if i % per_round != 0]


def summarise(clock: PhaseClock, per_round: int) -> dict[str, float]:
    med = statistics.median
    steps = intervals(clock)
    in_step = timed_only(clock.in_step, per_round)
    gen = timed_only(clock.phases["generate"], per_round)
    score = timed_only(clock.phases["reward_adv"], per_round)
    update = [s - g - r for s, g, r in zip(in_step, gen, score)]
    old = timed_only(clock.phases["old_logprobs"], per_round)
    return {
        "step": med(steps),
        "step_min": min(steps),
        "step_max": max(steps),
        "timed_steps": len(steps),
        "generate": med(gen),
        "reward_adv": med(score),
        "update": med(update),
        "old_logprobs": med(old) if old else 0.0,
        "loop": med(steps) - med(in_step),
        "tokens": med(timed_only(clock.tokens, per_round)),
        "width": med(clock.widths),
    }


def report(ours: PhaseClock, trl: PhaseClock, args) -> None:
    per_round = 1 + args.steps
    o, t = summarise(ours, per_round), summarise(trl, per_round)
    completions = args.prompts * args.n
    rows = [
        ("step time, end to end", "step", "{:11.3f}"),
        ("  min", "step_min", "{:11.3f}"),
        ("  max", "step_max", "{:11.3f}"),
        ("  generate", "generate", "{:11.3f}"),
        ("  reward + advantages", "reward_adv", "{:11.3f}"),
        ("  update (+ old log-probs)", "update", "{:11.3f}"),
        ("    of which old log-probs", "old_logprobs", "{:11.3f}"),
        ("  trainer loop overhead", "loop", "{:11.3f}"),
    ]
    print()
    print(f"{'seconds (median over steps)':30s} {'mimesis-pl':>11s} {'TRL':>11s} {'ours/TRL':>9s}")
    for label, key, fmt in rows:
        ratio = f"{o[key] / t[key]:9.2f}" if t[key] > 0 else f"{'-':>9s}"
        print(f"{label:30s} {fmt.format(o[key])} {fmt.format(t[key])} {ratio}")
    print(f"{'tokens generated per step':30s} {o['tokens']:11.0f} {t['tokens']:11.0f}")
    print(f"{'mean completion length':30s} {o['tokens'] / completions:11.1f} {t['tokens'] / completions:11.1f}")
    print(f"{'padded prompt+completion width':30s} {o['width']:11.0f} {t['width']:11.0f}")
    print(f"{'generated tokens/s (per step)':30s} {o['tokens'] / o['step']:11.0f} {t['tokens'] / t['step']:11.0f}")
    print()
    print(
        f"ratio ours/TRL of the median step time: {o['step'] / t['step']:.2f}  (goal <= 1.0; "
        f"{o['timed_steps']} and {t['timed_steps']} timed steps over {args.rounds} interleaved rounds)"
    )
    lo, mid, hi = ratio_stats(per_round_step_medians(ours), per_round_step_medians(trl))
    print(f"per-round ratio ours/TRL of the median step time: min {lo:.2f}  median {mid:.2f}  max {hi:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--n", type=int, default=4, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round and system (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stop-at-eos", action="store_true", help="stop at <|im_end|> instead of forcing full length")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of both sides (1: two spinning OpenMP threads on shared cores made steps 10x noisier)",
    )
    args = parser.parse_args()

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    pl.seed_everything(args.seed, verbose=False)

    prompts = make_prompts(args.prompts)
    module = TimedAgentGRPO(
        policy=ModelSettings(model_path=str(TINY)),
        optim=OptimSettings(lr=args.lr, weight_decay=0.0, betas=(0.9, 0.95), schedule="constant"),
        ppo=PPOSettings(
            mini_batch_size=args.prompts * args.n,
            micro_batch_size=args.prompts * args.n,
            epochs=1,
            loss_agg="token-mean",
            grad_clip=1.0,
        ),
    )
    ours, trl = PhaseClock(), PhaseClock()
    module.clock = ours
    with tempfile.TemporaryDirectory(prefix="bench-grpo-trl-") as out:
        trl_trainer = build_trl(prompts, args, trl, out)
        import trl as trl_pkg

        print(
            f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); lightning {pl.__version__}; "
            f"trl {trl_pkg.__version__}; "
            f"{args.prompts} prompts x n={args.n}, {args.max_new_tokens} new tokens "
            f"({'stop at EOS' if args.stop_at_eos else 'forced full length'}), lr {args.lr}, fp32"
        )
        for r in range(args.rounds):
            order = [
                ("ours", lambda: run_ours(module, prompts, args, ours)),
                ("trl", lambda: run_trl(trl_trainer, trl)),
            ]
            for name, run in order if r % 2 == 0 else order[::-1]:
                start = time.perf_counter()
                run()
                seconds = time.perf_counter() - start
                print(f"round {r + 1}/{args.rounds} {name:4s}: {1 + args.steps} steps in {seconds:.1f} s", flush=True)
    report(ours, trl, args)


if __name__ == "__main__":
    main()
