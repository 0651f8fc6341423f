"""Benchmark rollout throughput of HFEngine: micro-batched concurrent requests vs one at a time.

64 requests (chat prompts of the tiny Qwen3 from ``assets/``), 32 new tokens each, sampled at
temperature 1 with per-request seeds and the end-of-turn id as stop id. "batched" sends all 64 at
once (the engine folds them into ``ceil(64 / max_batch_size)`` ``generate`` calls); "sequential"
awaits each request before sending the next, as a loop without batching would. Rounds alternate
so machine noise hits both sides alike; the median of the rounds is printed, with the ratio.
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

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from mimesis_pl.chat import ChatRenderer  # noqa: E402
from mimesis_pl.rollout.engines import HFEngine, SamplingParams  # noqa: E402

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
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.requests} requests x {args.max_new_tokens} new tokens"
    )

    timed(batched, engine, requests[:4])  # warm-up: first-call allocations and kernel selection
    rates: dict[str, list[float]] = {"batched": [], "sequential": []}
    batches = []
    for _ in range(args.rounds):
        for name, fn in (("batched", batched), ("sequential", sequential)):
            before = engine.batches_run
            seconds, tokens = timed(fn, engine, requests)
            rates[name].append(tokens / seconds)
            if name == "batched":
                batches.append(engine.batches_run - before)
    b, s = statistics.median(rates["batched"]), statistics.median(rates["sequential"])
    print(f"HFEngine batched    : {b:9.0f} tok/s  (median of {args.rounds}; {batches[0]} generate call(s) per round)")
    print(f"HFEngine sequential : {s:9.0f} tok/s  (median of {args.rounds}; {args.requests} generate calls per round)")
    print(f"ratio batched/sequential: {b / s:.1f}x")

    if args.vllm:
        measure_vllm(requests, args.rounds)


def measure_vllm(requests, rounds: int) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_HOST_IP", "127.0.0.1")
    os.environ.setdefault("VLLM_CACHE_ROOT", tempfile.mkdtemp(prefix="mimesis-vllm-cache-"))
    from mimesis_pl.rollout.engines import VLLMEngine

    engine = VLLMEngine(TINY, dtype="float32", max_model_len=1024, kv_cache_memory_bytes=64 << 20, enforce_eager=True)
    try:
        timed(batched, engine, requests[:4])
        rate = statistics.median(
            tokens / seconds for seconds, tokens in (timed(batched, engine, requests) for _ in range(rounds))
        )
        print(f"VLLMEngine concurrent: {rate:9.0f} tok/s  (median of {rounds})")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
