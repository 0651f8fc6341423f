"""Benchmark ``mimesis-pl serve`` on the tiny simulator against the in-process engine doing the same work.

At 1, 4 and 16 concurrent clients (closed loop: each client sends its next request when its last one is
answered), ``--requests`` chat requests per level go either over HTTP to the server (``python -m
mimesis_pl.cli serve`` in its own process, as deployed) or straight to an :class:`HFEngine` in this process
(its own copy of the same weights) with the prompt ids the server renders for the same messages. Both sides
generate at temperature 0 with no stop id (the server is sent vLLM's ``ignore_eos``), so every request
generates exactly ``--max-new-tokens`` ids on either side, with the same batch size, batch wait and torch
threads (``--threads``, 1 by default: a shared machine's cores are oversubscribed). Rounds alternate
(``rounds.py``); printed per level are requests/s and p50/p95 latency of each side (min / median / max over
rounds) and the per-round ratio served/in-process of the wall time (the server's overhead; goal: at most 1.3
at 16 clients).

    python bench/bench_serve.py                       # about a minute on 2 cores
    python bench/bench_serve.py --rounds 5 --requests 64 --max-new-tokens 32
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import aiohttp
import torch
from rounds import Rounds

from mimesis_pl.causal_lm import load_causal_lm
from mimesis_pl.rollout.engines import HFEngine, SamplingParams
from mimesis_pl.serve import ServedModel, ServeSettings, parse_request

TINY = REPO / "assets" / "tiny-qwen3"
TOPICS = ["a refund", "a table for two", "a late train", "a broken kettle", "a lost parcel", "a hotel room"]


def conversation(i: int) -> list[dict]:
    """Request ``i``'s messages: a simulator's system prompt and an agent's question."""
    return [
        {"role": "system", "content": f"You are a customer who needs help with {TOPICS[i % len(TOPICS)]}."},
        {"role": "user", "content": f"Hello, how can I help you today? (case {i})"},
    ]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by the nearest-rank rule."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))]


async def closed_loop(clients: int, n: int, ask) -> tuple[float, list[float]]:
    """``clients`` workers share ``n`` requests, one at a time each; returns (wall seconds, latencies)."""
    todo = iter(range(n))
    latencies: list[float] = []

    async def worker() -> None:
        for i in todo:
            start = time.perf_counter()
            await ask(i)
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - start, latencies


def measure_served(url: str, model: str, clients: int, n: int, max_new: int) -> tuple[float, list[float]]:
    async def run() -> tuple[float, list[float]]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:

            async def ask(i: int) -> None:
                body = {
                    "model": model,
                    "messages": conversation(i),
                    "max_tokens": max_new,
                    "temperature": 0,
                    "ignore_eos": True,
                }
                async with session.post(url + "/chat/completions", json=body) as response:
                    reply = await response.json()
                    if response.status != 200 or reply["usage"]["completion_tokens"] != max_new:
                        raise RuntimeError(f"unexpected reply {response.status}: {reply}")

            return await closed_loop(clients, n, ask)

    return asyncio.run(run())


def measure_inproc(engine: HFEngine, prompts: list[list[int]], clients: int, max_new: int) -> tuple[float, list[float]]:
    params = SamplingParams(max_new_tokens=max_new, temperature=0.0, seed=0)

    async def ask(i: int) -> None:
        result = await engine.generate(prompts[i], params)
        if len(result.token_ids) != max_new:
            raise RuntimeError(f"in-process request {i} generated {len(result.token_ids)} ids, not {max_new}")

    return asyncio.run(closed_loop(clients, len(prompts), ask))


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str, str]:
    """``python -m mimesis_pl.cli serve`` as its own process (as deployed); returns (process, API root, name)."""
    command = [sys.executable, "-m", "mimesis_pl.cli", "serve", str(TINY), "--port", "0", "--device", "cpu"]
    command += ["--max-batch-size", str(args.max_batch_size), "--batch-wait-ms", str(args.batch_wait_ms)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(args.threads)}
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    ready = process.stdout.readline()
    match = re.search(r"serving (\S+) \(\S+\) on (http://\S+/v1)", ready)
    if match is None:
        process.kill()
        raise RuntimeError(f"mimesis-pl serve did not start: {ready!r}")
    return process, match.group(2), match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--requests", type=int, default=32, help="requests per level (at least the clients)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--max-batch-size", type=int, default=16)
    parser.add_argument("--batch-wait-ms", type=float, default=10.0, help="both sides' wait for company")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each side (a shared machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    process, url, name = start_server(args)
    try:
        served = ServedModel(ServeSettings(model_dir=str(TINY)), engine=_NoEngine())  # renders the same prompts
        model = load_causal_lm(str(TINY))
        engine = HFEngine(model, served.tokenizer, max_batch_size=args.max_batch_size, batch_wait_ms=args.batch_wait_ms)
        print(
            f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.requests} requests per level x "
            f"{args.max_new_tokens} new tokens; max batch {args.max_batch_size}; batch wait {args.batch_wait_ms} ms; "
            f"{args.rounds} rounds"
        )
        for clients in args.clients:
            run_level(Target(url, name, served), engine, clients, args)
        engine.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


class _NoEngine:
    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Target:
    url: str
    model_name: str
    served: ServedModel


def run_level(server: Target, engine: HFEngine, clients: int, args: argparse.Namespace) -> None:
    """Both sides at ``clients`` concurrent clients, in alternating rounds; print the level's table and ratio."""
    n = max(args.requests, clients)
    chats = [
        parse_request({"messages": conversation(i)}, model_name=server.model_name, default_thinking=None)
        for i in range(n)
    ]
    prompts = [server.served.render(chat).ids for chat in chats]
    measure = {
        "served": lambda: measure_served(server.url, server.model_name, clients, n, args.max_new_tokens),
        "inproc": lambda: measure_inproc(engine, prompts, clients, args.max_new_tokens),
    }
    for fn in measure.values():
        fn()  # warm-up
    rounds = Rounds(["inproc", "served"], args.rounds)
    for variant in rounds:
        seconds, latencies = measure[variant]()
        rounds.record(
            variant,
            seconds=seconds,
            req_per_s=n / seconds,
            p50_ms=1000 * statistics.median(latencies),
            p95_ms=1000 * percentile(latencies, 0.95),
        )
    print(f"-- {clients} concurrent client(s), {n} requests")
    rounds.print_table("req_per_s", "{:.2f}")
    rounds.print_table("p50_ms", "{:.0f}")
    rounds.print_table("p95_ms", "{:.0f}")
    _, ratio, _ = rounds.print_ratio("served", "inproc", "seconds", better="lower")
    print(f"served/inproc wall time @{clients}: median {ratio:.3f}")


if __name__ == "__main__":
    main()
