"""Benchmark the privileged shim: added latency over calling the upstream directly, and memory.

Three processes on loopback, as in deployment: a scripted OpenAI-compatible upstream (answers at
once with a ``<think>`` block), the shim started through its CLI (``python -m mimesis_pl.shim``),
and this client. For 1 and 64 concurrent episodes it sends the same requests straight to the
upstream and through the shim, in alternating rounds so drift hits both sides alike, and prints
p50/p95 of each, their difference, and the per-round p50 ratio shim/direct as min / median / max.
Then it pushes ``--episodes`` episodes through a shim with ``--max-episodes`` and reports the
shim's RSS and the store's tracemalloc size.

    python bench/bench_shim.py                 # full run (about a minute on 2 cores)
    python bench/bench_shim.py --requests 200 --episodes 2000   # quick look
    python bench/bench_shim.py --upstream-delay-ms 50            # with a stand-in generation time
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import aiohttp
from aiohttp import web
from rounds import ratio_stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mimesis_pl.shim.store import PrivilegedStore, StoreLimits

REASONING = "The user wants a refund but will not say so until asked twice. " * 6  # ~390 chars
PUBLIC = "Hi, I bought a kettle last week and it stopped working. What can I do?"


# -- the upstream (runs as its own process) -----------------------------------------------------


def serve_upstream(delay_s: float) -> None:
    reply = json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": "sim",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"<think>{REASONING}</think>\n\n{PUBLIC}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 120, "total_tokens": 170},
        }
    ).encode()

    async def complete(request: web.Request) -> web.Response:
        await request.read()
        if delay_s:
            await asyncio.sleep(delay_s)  # stands in for generation time
        return web.Response(body=reply, content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", complete)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/v1", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


# -- processes ----------------------------------------------------------------------------------


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise RuntimeError(f"{cmd} exited before printing its URL")
    return proc, line


def start_shim(upstream_url: str, *extra: str) -> tuple[subprocess.Popen, str]:
    proc, line = start([sys.executable, "-m", "mimesis_pl.shim", "--upstream", upstream_url, "--port", "0", *extra])
    return proc, line.split()[3]  # "mimesis-pl shim: serving URL -> UPSTREAM"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- load ---------------------------------------------------------------------------------------


def body(episode: int, turn: int) -> bytes:
    messages = [
        {"role": "system", "content": "You are a customer. " * 20},
        {"role": "user", "content": f"Episode {episode}, turn {turn}: how can I help you today?"},
    ]
    return json.dumps({"model": "sim", "messages": messages, "max_tokens": 256}).encode()


async def run_load(
    session: aiohttp.ClientSession, url_for, concurrency: int, per_worker: int, ep_base: int = 0
) -> list[float]:
    latencies: list[float] = []

    async def worker(w: int) -> None:
        for turn in range(per_worker):
            t0 = time.perf_counter()
            async with session.post(
                url_for(ep_base + w), data=body(ep_base + w, turn), headers={"Content-Type": "application/json"}
            ) as resp:
                await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"HTTP {resp.status} from {url_for(ep_base + w)}")
            latencies.append(time.perf_counter() - t0)

    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return latencies


def pct(values: list[float], q: int) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000 if len(values) > 1 else values[0] * 1000
    )


async def latency(upstream_url: str, shim_url: str, requests: int, rounds: int) -> None:
    direct_url = upstream_url + "/chat/completions"
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        print(f"{'episodes':>8} {'target':>7} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8}")
        for concurrency in (1, 64):
            per_worker = max(1, requests // concurrency // rounds)
            # Warm both paths (connections, first-request costs) before measuring.
            await run_load(session, lambda e: direct_url, concurrency, 2)
            await run_load(session, lambda e: f"{shim_url}/ep/warm-{e}/v1/chat/completions", concurrency, 2)
            got: dict[str, list[float]] = {"direct": [], "shim": []}
            round_p50: dict[str, list[float]] = {"direct": [], "shim": []}
            wall = {"direct": 0.0, "shim": 0.0}
            for r in range(rounds):
                for target in ("direct", "shim") if r % 2 == 0 else ("shim", "direct"):
                    prefix = f"{shim_url}/ep/bench-c{concurrency}"

                    def url_for(e: int, target: str = target, prefix: str = prefix) -> str:
                        return direct_url if target == "direct" else f"{prefix}-{e}/v1/chat/completions"

                    t0 = time.perf_counter()
                    values = await run_load(session, url_for, concurrency, per_worker, ep_base=r * 1000)
                    wall[target] += time.perf_counter() - t0
                    got[target] += values
                    round_p50[target].append(pct(values, 50))
            for target in ("direct", "shim"):
                values = got[target]
                print(
                    f"{concurrency:>8} {target:>7} {len(values):>6} {pct(values, 50):>8.2f} "
                    f"{pct(values, 95):>8.2f} {len(values) / wall[target]:>8.0f}"
                )
            print(
                f"{concurrency:>8} {'added':>7} {'':>6} {pct(got['shim'], 50) - pct(got['direct'], 50):>+8.2f} "
                f"{pct(got['shim'], 95) - pct(got['direct'], 95):>+8.2f}"
            )
            lo, mid, hi = ratio_stats(round_p50["shim"], round_p50["direct"])
            print(f"{concurrency:>8} per-round p50 ratio shim/direct: min {lo:.2f}  median {mid:.2f}  max {hi:.2f}")


async def fill(shim_url: str, episodes: int, turns: int) -> float:
    connector = aiohttp.TCPConnector(limit=0)
    t0 = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector) as session:
        concurrency = 64
        per_slot = -(-episodes // concurrency)

        async def slot(s: int) -> None:
            for k in range(per_slot):
                e = s * per_slot + k
                if e >= episodes:
                    return
                for turn in range(turns):
                    url = f"{shim_url}/ep/fill-{e}/v1/chat/completions"
                    async with session.post(
                        url, data=body(e, turn), headers={"Content-Type": "application/json"}
                    ) as resp:
                        await resp.read()

        await asyncio.gather(*(slot(s) for s in range(concurrency)))
        async with session.get(f"{shim_url}/stats") as resp:
            stats = await resp.json()
    store = stats["store"]
    print(
        f"  {episodes} episodes x {turns} turns in {time.perf_counter() - t0:.1f} s; store now "
        f"{store['episodes']} episodes / {store['entries']} entries / {store['chars'] / 1e6:.2f} M chars; "
        f"evictions {store['evictions']} (max_episodes {store['evicted_max_episodes']}, ttl {store['evicted_ttl']})"
    )
    return store["evictions"]


def store_tracemalloc(episodes: int, turns: int, max_episodes: int) -> float:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    store = PrivilegedStore(StoreLimits(max_episodes=max_episodes))
    for e in range(episodes):
        for _ in range(turns):
            # Fresh string objects, as the server makes them from each decoded reply.
            store.append(f"ep-{e}", reasoning="".join([REASONING]), public="".join([PUBLIC]), finish_reason="stop")  # noqa: FLY002
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2560, help="requests per target per concurrency level")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--max-episodes", type=int, default=1000)
    parser.add_argument(
        "--upstream-delay-ms", type=float, default=0.0, help="upstream answer time; 0 isolates the shim's own cost"
    )
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        return serve_upstream(args.upstream_delay_ms / 1000)

    upstream, upstream_url = start(
        [sys.executable, __file__, "--serve-upstream", "--upstream-delay-ms", str(args.upstream_delay_ms)]
    )
    shim = shim2 = None
    try:
        shim, shim_url = start_shim(upstream_url)
        print(
            f"upstream {upstream_url} (answers after {args.upstream_delay_ms:g} ms); shim {shim_url}; "
            f"{os.cpu_count()} CPUs shared by client, shim and upstream"
        )
        print("\nlatency per request (direct = client -> upstream; shim = client -> shim -> upstream)")
        asyncio.run(latency(upstream_url, shim_url, args.requests, args.rounds))

        print(f"\nmemory: shim with --max-episodes {args.max_episodes}")
        shim2, shim2_url = start_shim(upstream_url, "--max-episodes", str(args.max_episodes))
        time.sleep(0.2)
        idle = rss_mib(shim2.pid)
        asyncio.run(fill(shim2_url, args.episodes, args.turns))
        print(f"  shim RSS: {idle:.1f} MiB idle -> {rss_mib(shim2.pid):.1f} MiB after {args.episodes} episodes")
        for cap in (args.max_episodes, args.episodes):
            mib = store_tracemalloc(args.episodes, args.turns, cap)
            print(
                f"  store alone (tracemalloc), {args.episodes} episodes x {args.turns} turns, "
                f"max_episodes={cap}: {mib:.1f} MiB"
            )
    finally:
        for proc in (shim, shim2, upstream):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()


if __name__ == "__main__":
    main()
