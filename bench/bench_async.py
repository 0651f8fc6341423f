"""Rollouts ahead of the update: step time at ``rollout.max_staleness`` k = 0 vs k >= 1 with a slow served user.

    python bench/bench_async.py [--config configs/agent_csd.yaml] [--steps 4] [--delays 0 2 5] [--ks 0 1] [--rounds 1]
        [--set model.init_args.rollout.n_samples=2 ...]

The scripted user is served on loopback behind a fixed delay per reply (``--delays``, seconds), standing in for a
served simulator; each job's own shim sits in front of it (``OpenAIUserSettings``), so the coach reads privileged
reasoning as in real use. For each delay, each k runs the config for ``--steps`` steps in a fresh process, in
alternating rounds (``rounds.py``). A step's time is the wall-clock gap between consecutive steps' logged scalars. The
pipeline fills at the first step (batches 0…k roll out together), so the first max(k) gaps after it are faster than
the steady state: every variant leaves out its first step and the next max(k) gaps, and the median of the rest is
the run's step time (``--steps`` must exceed max(k) + 1). Printed per
delay: each k's step time, the ratios k0/k (min / median / max over rounds: above 1 means k is faster), and the
largest staleness each run measured (``async/staleness_max``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from aiohttp import web
from rounds import Rounds

REPO = Path(__file__).resolve().parents[1]


def delayed_user_server(delay_s: float) -> tuple[str, callable]:
    """Serve the scripted user on loopback, each chat completion ``delay_s`` late: ``(base_url, stop)``."""
    from mimesis_pl.users.scripted_server import make_scripted_app

    loop = asyncio.new_event_loop()
    ready: dict[str, object] = {}

    @web.middleware
    async def slow(request, handler):
        if request.path.endswith("/chat/completions"):
            await asyncio.sleep(delay_s)
        return await handler(request)

    async def start():
        app = make_scripted_app()
        app.middlewares.append(slow)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ready["runner"] = runner
        ready["url"] = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"

    def serve():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    while "url" not in ready:
        thread.join(0.05)

    def stop():
        asyncio.run_coroutine_threadsafe(ready["runner"].cleanup(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()

    return str(ready["url"]), stop


def step_times(save_dir: Path) -> tuple[list[float], float]:
    """Wall-clock seconds between consecutive steps (from ``train/updates``) and the largest staleness logged."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = sorted(p for p in save_dir.rglob("events.out.tfevents.*"))[-1].parent
    events = EventAccumulator(str(run))
    events.Reload()
    walls = [e.wall_time for e in events.Scalars("train/updates")]
    tags = events.Tags()["scalars"]
    stale = (
        max((e.value for e in events.Scalars("async/staleness_max")), default=0.0)
        if "async/staleness_max" in tags
        else 0.0
    )
    return [b - a for a, b in zip(walls, walls[1:])], stale


def run_job(config: str, steps: int, k: int, url: str, out: Path, extra: list[str], skip: int) -> tuple[float, float]:
    """One fit in a fresh process: ``(median step time without the first step and the next skip gaps, staleness)``."""
    users = {"class_path": "mimesis_pl.rollout.OpenAIUserSettings", "init_args": {"upstream_url": url}}
    argv = [sys.executable, "-m", "mimesis_pl.cli", "fit", "--config", config, f"--trainer.max_steps={steps}"]
    argv += [f"--model.init_args.rollout.max_staleness={k}", f"--model.init_args.rollout.users={json.dumps(users)}"]
    argv += [f"--trainer.logger.init_args.save_dir={out}", f"--trainer.default_root_dir={out}", *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"k={k} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    gaps, stale = step_times(out)
    if len(gaps) <= skip:
        raise RuntimeError(f"need --steps > {skip + 1}: the first step and the {skip} gap(s) after it are left out")
    return statistics.median(gaps[skip:]), stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/agent_csd.yaml")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 2.0, 5.0])
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a CLI override for every run, e.g. trainer.x=1"
    )
    args = parser.parse_args()
    extra = [f"--{item}" for item in args.set]
    variants = [f"k{k}" for k in args.ks]
    for delay in args.delays:
        url, stop = delayed_user_server(delay)
        rounds = Rounds(variants, n_rounds=args.rounds)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                for n, variant in enumerate(rounds):
                    k = int(variant[1:])
                    out = Path(tmp) / f"{n}"
                    seconds, stale = run_job(args.config, args.steps, k, url, out, extra, skip=max(args.ks))
                    rounds.record(variant, step_s=seconds, staleness_max=stale)
                    print(f"delay {delay:g} s  {variant}  step {seconds:.2f} s  staleness_max {stale:g}", flush=True)
        finally:
            stop()
        print(f"== delay {delay:g} s per user reply, {args.steps} steps, first + {max(args.ks)} left out (fill)")
        rounds.print_table("step_s", "{:.2f}")
        for variant in variants[1:]:
            rounds.print_ratio(variants[0], variant, "step_s", better="higher")
        for variant in variants:
            print(f"{'staleness_max':>18} {variant:>14}: {max(rounds.series(variant, 'staleness_max')):g}")


if __name__ == "__main__":
    main()
