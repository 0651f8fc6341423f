"""Benchmark rollout throughput of HFEngine: micro-batched concurrent requests vs one at a time.

64 requests (chat prompts of the tiny Qwen3 from ``assets/``), 32 new tokens each, sampled at
temperature 1 with per-request seeds and the end-of-turn id as stop id. "batched" sends all 64 at
once (the engine folds them into ``ceil(64 / max_batch_size)`` ``generate`` calls); "sequential"
awaits each request before sending the next, as a loop without batching would. Rounds alternate
(``rounds.py``) so machine noise hits both sides alike; printed are each side's tok/s and the
per-round ratio batched/sequential as min / median / max.
``--vllm`` adds VLLMEngine (in-process, fp32, eager) on the same requests when vLLM is installed.

    python bench/bench_engines.py                    # about half a minute on 2 cores
    python bench/bench_engines.py --rounds 5 --max-new-tokens 64
    /work/venv-vllm/bin/python bench/bench_engines.py --vllm
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch
from rounds import Rounds
from transformers import AutoModelForCausalLM, AutoTokenizer

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.rollout.engines import HFEngine, SamplingParams

TINY = REPO / "assets" / "tiny-qwen3"
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


def make_requests(tokenizer, n: int, max_new_tokens: int) -> list[tuple[list[int], SamplingParams]]:
    renderer = ChatRenderer(tokenizer)
    requests = []
    for i in range(n):
        prompt = renderer.prompt_ids(
            [{"role": "user", "content": f"Hello, I need help with {TOPICS[i % len(TOPICS)]} (case {i})."}]
        )
        params = SamplingParams(
            max_new_tokens=max_new_tokens, temperature=1.0, stop_token_ids=(tokenizer.eos_token_id,), seed=i
        )
        requests.append((prompt, params))
    return requests


async def batched(engine, requests) -> int:
    results = await asyncio.gather(*[engine.generate(ids, p) for ids, p in requests])
    return sum(len(r.token_ids) for r in results)


async def sequential(engine, requests) -> int:
    total = 0
    for ids, p in requests:
        total += len((await engine.generate(ids, p)).token_ids)
    return total


def timed(fn, engine, requests) -> tuple[float, int]:
    start = time.perf_counter()
    tokens = asyncio.run(fn(engine, requests))
    return time.perf_counter() - start, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vllm", action="store_true", help="also measure VLLMEngine (needs vllm installed)")
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(TINY)
    model = AutoModelForCausalLM.from_pretrained(TINY)
    requests = make_requests(tokenizer, args.requests, args.max_new_tokens)
    engine = HFEngine(model, tokenizer, max_batch_size=args.max_batch_size)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"{args.requests} requests x {args.max_new_tokens} new tokens"
    )

    timed(batched, engine, requests[:4])  # warm-up: first-call allocations and kernel selection
    fns = {"batched": batched, "sequential": sequential}
    rounds = Rounds(list(fns), args.rounds)
    for name in rounds:
        before = engine.batches_run
        seconds, tokens = timed(fns[name], engine, requests)
        rounds.record(name, tok_per_s=tokens / seconds, generate_calls=engine.batches_run - before)
    rounds.print_table("tok_per_s", "{:.0f}")
    rounds.print_table("generate_calls", "{:.0f}")
    rounds.print_ratio("batched", "sequential", "tok_per_s", better="higher")

    if args.vllm:
        measure_vllm(requests, args.rounds)


def measure_vllm(requests, rounds: int) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_HOST_IP", "127.0.0.1")
    os.environ.setdefault("VLLM_CACHE_ROOT", tempfile.mkdtemp(prefix="mimesis-vllm-cache-"))
    from mimesis_pl.rollout.engines import VLLMEngine, VLLMEngineSettings

    settings = VLLMEngineSettings(
        dtype="float32", max_model_len=1024, kv_cache_memory_bytes=64 << 20, enforce_eager=True
    )
    engine = VLLMEngine(TINY, settings)
    try:
        timed(batched, engine, requests[:4])
        rates = [tokens / seconds for seconds, tokens in (timed(batched, engine, requests) for _ in range(rounds))]
        print(
            f"VLLMEngine concurrent: {statistics.median(rates):9.0f} tok/s  (median of {rounds}; "
            f"min {min(rates):.0f}, max {max(rates):.0f})"
        )
    finally:
        engine.close()


if __name__ == "__main__":
    main()
