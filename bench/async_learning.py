"""Does a run with rollouts ahead of the update learn as much? The main job at ``rollout.max_staleness`` k vs k = 0.

    python bench/async_learning.py [--config configs/agent_csd.yaml] [--seeds 0 1 2] [--ks 0 1] [--steps 16]
        [--jobs 2] [--out runs/async_learning] [--set KEY=VALUE ...]

Each (k, seed) trains the config in a fresh process with ``seed_everything`` = seed (so both arms of a seed start
from the same weights and draw the same prompts, batch N at step N). A run's gain is the mean
``rollout/episode_reward_mean`` of its last quarter of steps minus its first quarter's, the README's learning
measure. Printed: each run's gain, and per k >= 1 the paired difference (k − k0) of the gains over seeds with its
95 % t-interval. The goal of the async issue: within 0.05 of k = 0. Saved runs (``<out>/runs/k{k}_seed{s}.json``)
are reused, so an interrupted study resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_stats import paired_t_interval, quarter_means  # noqa: E402

CURVE = "rollout/episode_reward_mean"


def curve(save_dir: Path, tag: str = CURVE) -> list[float]:
    """The per-step values of ``tag`` in the newest TensorBoard run under ``save_dir``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = sorted(save_dir.rglob("events.out.tfevents.*"))[-1].parent
    events = EventAccumulator(str(run))
    events.Reload()
    return [e.value for e in events.Scalars(tag)]


def run_one(config: str, k: int, seed: int, steps: int, out: Path, extra: list[str]) -> dict:
    """Train one (k, seed) in a fresh process (or load its saved result): its curve and gain."""
    saved = out / "runs" / f"k{k}_seed{seed}.json"
    settings = {"config": config, "steps": steps, "extra": extra}
    if saved.exists():
        result = json.loads(saved.read_text())
        if result.get("settings") == settings:
            return result
    save_dir = out / "tb" / f"k{k}_seed{seed}"
    argv = [sys.executable, "-m", "mimesis_pl.cli", "fit", "--config", config, f"--seed_everything={seed}"]
    argv += [f"--trainer.max_steps={steps}", f"--model.init_args.rollout.max_staleness={k}"]
    argv += [f"--trainer.logger.init_args.save_dir={save_dir}", f"--trainer.default_root_dir={save_dir}", *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    log = out / "logs" / f"k{k}_seed{seed}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as handle:
        done = subprocess.run(argv, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"k={k} seed={seed} failed ({done.returncode}); see {log}")
    values = curve(save_dir)
    first, last = quarter_means(values)
    result = {"settings": settings, "k": k, "seed": seed, "curve": values, "first": first, "last": last}
    result["gain"] = last - first
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(result, indent=1))
    return result


def report(results: dict[tuple[int, int], dict], ks: list[int], seeds: list[int]) -> str:
    """Each run's first → last quarter and the paired k − k0 difference of the gains."""
    lines = ["| k | seed | first quarter | last quarter | gain |", "|---|---|---|---|---|"]
    for k in ks:
        for s in seeds:
            r = results[(k, s)]
            lines.append(f"| {k} | {s} | {r['first']:.3f} | {r['last']:.3f} | {r['gain']:+.3f} |")
    base = ks[0]
    for k in ks[1:]:
        diff = paired_t_interval([results[(k, s)]["gain"] - results[(base, s)]["gain"] for s in seeds])
        low, high = diff["ci95"]
        head = f"\ngain(k={k}) − gain(k={base}) over {diff['n']} seeds"
        lines.append(f"{head}: {diff['mean']:+.3f} [95% t {low:+.3f}, {high:+.3f}]")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/agent_csd.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side (each fit uses about one core)")
    parser.add_argument("--out", default="runs/async_learning")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a CLI override for every run")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    extra = [f"--{item}" for item in args.set]
    order = [(k, s) for s in args.seeds for k in args.ks]  # a seed's arms side by side: the load falls on both
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {key: pool.submit(run_one, args.config, *key, args.steps, out, extra) for key in order}
        results = {key: future.result() for key, future in futures.items()}
    text = report(results, args.ks, args.seeds)
    (out / "results.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
