"""Incremental rendering vs re-rendering every prefix (the reference's way), side by side.

    python bench/bench_render.py [--model assets/tiny-qwen3] [--turns 8 32 128] [--rounds 9] [--repeats 3]

Prints, per conversation length, the time per conversation of both (min / median / max over rounds)
and the per-round speed-up re-prefix / incremental (min / median / max); the two run alternately,
round by round (``rounds.py``). Both produce the same ids and masks (checked here); ours renders
prefix *text* and tokenises each delta once, the baseline tokenises every prefix.
"""

from __future__ import annotations

import argparse
import random
import time

from rounds import Rounds
from transformers import AutoTokenizer

from mimesis_pl.chat import ChatRenderer

WORDS = [
    "the",
    "user",
    "asks",
    "about",
    "a",
    "flight",
    "to",
    "paris",
    "on",
    "friday",
    "and",
    "the",
    "agent",
    "searches",
    "options",
    "with",
    "care",
]


def conversation(turns: int, rng: random.Random) -> list[dict]:
    messages = [{"role": "system", "content": "You are a careful assistant."}]
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append({"role": role, "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80)))})
    return messages


def reprefix_baseline(tokenizer, messages: list[dict], role: str = "assistant") -> tuple[list[int], list[int]]:
    """Render and tokenise ``messages[:k+1]`` for every k; mask the trained role's tokens after its header."""
    header = tokenizer.apply_chat_template(
        [{"role": "user", "content": ""}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    base = tokenizer.apply_chat_template([{"role": "user", "content": ""}], tokenize=True, return_dict=False)
    header_len = len(header) - len(base)
    ids: list[int] = []
    mask: list[int] = []
    eot = tokenizer.eos_token_id
    for k, message in enumerate(messages):
        cur = list(tokenizer.apply_chat_template(messages[: k + 1], tokenize=True, return_dict=False))
        delta = cur[len(ids) :]
        ids = cur
        if message["role"] == role:
            end = max(i for i, t in enumerate(delta) if t == eot) + 1
            mask += [0] * header_len + [1] * (end - header_len) + [0] * (len(delta) - end)
        else:
            mask += [0] * len(delta)
    return ids, mask


def timed(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls: a short call is easily hit by another job's burst."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="assets/tiny-qwen3")
    parser.add_argument("--turns", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=3, help="calls per variant and round (the fastest counts)")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    renderer = ChatRenderer(tokenizer)
    rng = random.Random(0)
    for turns in args.turns:
        messages = conversation(turns, rng)
        ours = renderer.render(messages)
        assert (ours.input_ids, ours.loss_mask) == reprefix_baseline(tokenizer, messages), "outputs differ"
        fns = {
            "re-prefix": lambda m=messages: reprefix_baseline(tokenizer, m),
            "incremental": lambda m=messages: renderer.render(m),
        }
        rounds = Rounds(list(fns), args.rounds)
        for variant in rounds:
            rounds.record(variant, ms=timed(fns[variant], args.repeats) * 1e3)
        print(f"{turns} turns:")
        rounds.print_table("ms", "{:.1f}")
        rounds.print_ratio("re-prefix", "incremental", "ms", better="higher (speed-up)")


if __name__ == "__main__":
    main()
