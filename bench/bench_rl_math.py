"""Time the per-step RL math on a full-size batch on CPU: multi-turn advantages and the teacher gather.

Run: python bench/bench_rl_math.py [--batch 512] [--response 8192] [--prompt 1152] [--turns 16]
         [--noted-turns 4] [--repeats 10]

Shapes follow the reference run: 512 trajectories per step, 8192 response tokens, 16 assistant turns,
groups of 8; CSD notes on 4 turns per trajectory (2048 teacher rows of up to ~9.4k tokens).
Single functions print min / median / max over ``--repeats`` calls; the one comparison (teacher
gather over the ``logits_to_keep`` window vs over full rows) runs both in alternating rounds
(``rounds.py``) and prints the per-round ratio as min / median / max.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from rounds import Rounds

from mimesis_pl.rl import (
    build_teacher_rows,
    gather_teacher_logprobs,
    grpo_multiturn_advantages,
    pack_teacher_rows,
    teacher_logits_to_keep,
    turn_index_from_spans,
)
from mimesis_pl.spans import TurnSpan


def timed(fn, repeats: int) -> tuple[str, object]:
    """Wall time over `repeats` calls after one warm-up call, as 'min / median / max' ms, and the last result."""
    result = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return (
        f"{min(times):.1f} / {statistics.median(times):.1f} / {max(times):.1f} ms (min / median / max of {repeats})",
        result,
    )


def once_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def random_layout(gen: torch.Generator, prompt: int, response: int, turns: int) -> list[TurnSpan]:
    """`turns` equal segments of the response, each: assistant header (2), generated tokens, env reply.

    Turn 0's header is the end of the prompt (the generation prompt), as in real rollouts.
    """
    segment = response // turns
    spans = []
    for t in range(turns):
        seg_start = prompt + t * segment
        gen_start = seg_start if t == 0 else seg_start + 2
        n_gen = int(torch.randint(1, segment - 4, (1,), generator=gen))
        spans.append(TurnSpan(gen_start - 2, gen_start, gen_start + n_gen))
    return spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--response", type=int, default=8192)
    parser.add_argument("--prompt", type=int, default=1152)
    parser.add_argument("--turns", type=int, default=16)
    parser.add_argument("--noted-turns", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(0)
    B, L, P = args.batch, args.response, args.prompt
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch [{B}, {L}]")

    layouts = [random_layout(gen, P, L, args.turns) for _ in range(B)]
    turn_index = turn_index_from_spans(layouts, [P] * B, L)
    rewards = torch.rand(B, args.turns, generator=gen).round().tolist()
    groups = [b // 8 for b in range(B)]
    took, adv = timed(lambda: grpo_multiturn_advantages(turn_index, rewards, groups), args.repeats)
    print(f"grpo_multiturn_advantages [{B}, {L}]: {took}")

    sequences = [torch.randint(1, 50_000, (P + L,), generator=gen) for _ in range(B)]
    note_ids = list(range(100, 164))  # a 64-token note
    noted = [sorted(torch.randperm(args.turns, generator=gen)[: args.noted_turns].tolist()) for _ in range(B)]

    def build():
        return [
            build_teacher_rows(
                seq, spans, {t: "note" for t in ts}, lambda _: note_ids, width=P + L + 1024, prompt_len=P
            )
            for seq, spans, ts in zip(sequences, layouts, noted)
        ]

    took_build, trajs = timed(build, max(1, args.repeats // 2))
    print(f"build_teacher_rows x{B}: {took_build}")
    took_pack, packed = timed(lambda: pack_teacher_rows(trajs, response_length=L, pad_id=0), max(1, args.repeats // 2))
    rows, width = packed.input_ids.shape
    print(f"pack_teacher_rows -> [{rows}, {width}] (no empty rows): {took_pack}")
    keep = teacher_logits_to_keep(packed)
    token_logprobs = -torch.rand(rows, keep, generator=gen)
    full_window = -torch.rand(rows, width, generator=gen)
    gathers = {
        "window": lambda: gather_teacher_logprobs(token_logprobs, packed),
        "full_rows": lambda: gather_teacher_logprobs(full_window, packed),
    }
    teacher = gathers["window"]()
    gathers["full_rows"]()  # warm-up
    rounds = Rounds(list(gathers), args.repeats)
    for variant in rounds:
        rounds.record(variant, ms=once_ms(gathers[variant]))
    print(f"gather_teacher_logprobs -> [{B}, {L}]: window [{rows}, {keep}] vs full rows [{rows}, {width}]")
    rounds.print_table("ms", "{:.1f}")
    rounds.print_ratio("window", "full_rows", "ms")
    print(
        f"masked tokens: {int(packed.teacher_mask.sum())} of {B * L}; advantages finite: "
        f"{bool(torch.isfinite(adv).all())}; teacher finite: {bool(torch.isfinite(teacher).all())}"
    )


if __name__ == "__main__":
    main()
