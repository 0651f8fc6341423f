"""CueGym learning study: does CSD beat GRPO where the simulator's private reasoning says what its reply only hints?

Arms, all from ``assets/agent-cue-coached`` with ``configs/agent_csd_cue.yaml`` overridden:
  grpo     — GRPO only (``AgentGRPO``, no coach);
  csd      — GRPO + CSD at α 0.5, no placebo, sdar (the config as is);
  csd_ref  — GRPO + CSD at the reference's α 0.01 with placebo notes (AND mask);
  distill  — GRPO + CSD at α 0.5, no placebo, the top-k ``distill`` estimator (moves mass to unsampled tokens).
Gym variants: ``cue`` (the gym as shipped), and the two controls under which CSD should not help: ``dense``
(``reward_rule: per_reveal``) and ``explicit`` (``cue_mode: explicit``).

Endpoints per run: the exact probe P(correct aspect) on the 84 held-out decision contexts (the ``DecisionProbe``
callback's ``probe.jsonl``) after the last update (primary) and its mean over updates 1…N (the area under the curve);
held-out success with ``mimesis-pl test`` (42 tasks × ``--trials``). Comparisons are paired by seed: the mean
per-seed difference with its 95 % t-interval (training variance included); success also gets the task bootstrap.

    python bench/cue_study.py run --arms grpo csd csd_ref --variants cue --seeds 0 1 --out runs/cue_study
    python bench/cue_study.py run --arms grpo csd --variants dense explicit --seeds 0 1 2 3 4 5 --out runs/cue_study
    python bench/cue_study.py report --out runs/cue_study
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_study import _run  # noqa: E402  (the logged, timed subprocess run of every study)
from study_stats import (  # noqa: E402
    newest_version,
    own_trials,
    paired_difference,
    paired_t_interval,
    per_task_scores,
    seeds_needed,
)

ARMS = ("grpo", "csd", "csd_ref", "distill")
VARIANTS: dict[str, dict[str, Any]] = {
    "cue": {},
    "dense": {"reward_rule": "per_reveal"},
    "explicit": {"cue_mode": "explicit"},
}
PROBES = {"cue": "probe/test.jsonl", "dense": "probe/test.jsonl", "explicit": "probe/test_explicit.jsonl"}
BASE_CONFIG = REPO / "configs" / "agent_csd_cue.yaml"
EVAL_CONFIG = REPO / "configs" / "eval_cue.yaml"
DATA = "assets/data/cuegym"
COMPARISONS = (("csd", "grpo"), ("csd_ref", "grpo"), ("csd", "csd_ref"), ("distill", "grpo"))
CURVES = ("rollout/episode_reward_mean", "rollout/success_rate", "train/csd/gate_mean", "train/csd/teacher_gap_mean")


def arm_config(base: dict[str, Any], arm: str, variant: str, seed: int, steps: int, save_dir: str) -> dict[str, Any]:
    """The base config changed only where the arm and the gym variant differ (a new dict)."""
    if arm not in ARMS or variant not in VARIANTS:
        raise ValueError(f"arm must be one of {ARMS} and variant one of {tuple(VARIANTS)}, got {arm!r}, {variant!r}")
    config = json.loads(json.dumps(base))
    config["seed_everything"] = seed
    trainer = config["trainer"]
    trainer["max_steps"] = steps
    trainer["logger"]["init_args"].update({"save_dir": save_dir, "name": run_name(arm, variant, seed)})
    for callback in trainer["callbacks"]:
        if callback["class_path"].endswith("DecisionProbe"):
            callback["init_args"]["contexts"] = f"{DATA}/{PROBES[variant]}"
    init_args = config["model"]["init_args"]
    options = init_args["rollout"]["episode"].setdefault("gym_options", {})
    options["CueGym"] = {**options.get("CueGym", {}), **VARIANTS[variant]}
    if arm == "grpo":
        config["model"]["class_path"] = "mimesis_pl.modules.AgentGRPO"
        init_args.pop("csd", None)
        init_args.pop("coaching", None)
    elif arm == "csd_ref":
        init_args["csd"]["coef"] = 0.01
        init_args["coaching"]["placebo"] = True
    elif arm == "distill":
        init_args["csd"]["estimator"] = "distill"
    return config


def eval_gym_options(variant: str) -> dict[str, dict[str, Any]]:
    """The evaluation config's gym options with the variant's on top (the flag replaces the whole mapping)."""
    options = yaml.safe_load(EVAL_CONFIG.read_text())["model"]["init_args"]["episode"].get("gym_options", {})
    return {**options, "CueGym": {**options.get("CueGym", {}), **VARIANTS[variant]}}


def run_name(arm: str, variant: str, seed: int) -> str:
    return f"{variant}_{arm}_seed{seed}"


def probe_curve(run: Path) -> list[tuple[int, float]]:
    """(update, P(correct)) from the run's ``probe.jsonl`` (step 0 = before the first update)."""
    lines = (run / "probe.jsonl").read_text().splitlines()
    return sorted((int(r["step"]), float(r["p_correct"])) for r in map(json.loads, lines) if r)


def endpoints(curve: list[tuple[int, float]], steps: int) -> dict[str, float]:
    """The probe after update ``steps`` (primary) and its mean over updates 1…steps (the area under the curve)."""
    got = dict(curve)
    if steps not in got:
        raise ValueError(f"the probe has no value after update {steps}: {sorted(got)}")
    after = [got[s] for s in range(1, steps + 1) if s in got]
    return {"p_final": got[steps], "p_auc": sum(after) / len(after), "p_start": got.get(0, float("nan"))}


def scalars(run: Path) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"] if tag in CURVES}


def run_pair(arm: str, variant: str, seed: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Train and evaluate one (arm, variant, seed); saved under ``out/pairs`` so that a rerun resumes."""
    saved_at = out / "pairs" / f"{run_name(arm, variant, seed)}.json"
    settings = {"steps": args.steps, "tasks": args.tasks, "trials": args.trials}
    if saved_at.exists():
        saved = json.loads(saved_at.read_text())
        if saved["settings"] != settings:
            raise SystemExit(f"{saved_at} was run with {saved['settings']}, not {settings}: use another --out")
        return saved["result"]
    config = arm_config(yaml.safe_load(BASE_CONFIG.read_text()), arm, variant, seed, args.steps, str(out / "runs"))
    path = out / "configs" / f"{run_name(arm, variant, seed)}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    fit_s = _run([sys.executable, "-m", "mimesis_pl.cli", "fit", "--config", str(path)], out / f"fit_{path.stem}.log")
    run = newest_version(out / "runs" / run_name(arm, variant, seed))
    eval_dir = out / "eval" / run_name(arm, variant, seed)
    eval_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "mimesis_pl.cli", "test", "--config", str(EVAL_CONFIG), f"--seed_everything={seed}",
        f"--model.init_args.agent.model_path={run / 'hf' / 'final'}", f"--model.init_args.out_dir={eval_dir}",
        f"--model.init_args.n_trials={args.trials}", f"--trainer.logger.init_args.save_dir={eval_dir / 'tb'}",
        f"--data.init_args.tasks_per_gym={args.tasks}",
        f"--model.init_args.ks=[1,{args.trials}]" if args.trials > 1 else "--model.init_args.ks=[1]",
    ]  # fmt: skip
    cmd.append(f"--model.init_args.episode.gym_options={json.dumps(eval_gym_options(variant))}")
    eval_s = _run(cmd, eval_dir / "eval.log")
    rows = [json.loads(line) for line in (eval_dir / "trials.jsonl").read_text().splitlines() if line.strip()]
    scores = per_task_scores(own_trials(rows, json.loads((eval_dir / "results.json").read_text())))
    curve = probe_curve(run)
    result = {
        "probe": curve, **endpoints(curve, args.steps), "scores": scores, "curves": scalars(run),
        "success": sum(s["success"] for s in scores.values()) / len(scores), "fit_s": fit_s, "eval_s": eval_s,
    }  # fmt: skip
    saved_at.parent.mkdir(parents=True, exist_ok=True)
    saved_at.write_text(json.dumps({"settings": settings, "result": result}))
    return result


def load_all(out: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    done = {}
    for path in sorted((out / "pairs").glob("*.json")):
        variant, arm, seed = path.stem.split("_", 1)[0], *path.stem.split("_", 1)[1].rsplit("_seed", 1)
        done[arm, variant, int(seed)] = json.loads(path.read_text())["result"]
    return done


def paired(done: dict, variant: str, arm: str, base: str) -> dict[str, Any] | None:
    """Seed-paired differences ``arm − base`` on one variant (the seeds both ran), each endpoint."""
    seeds = sorted(s for a, v, s in done if a == arm and v == variant and (base, variant, s) in done)
    if not seeds:
        return None
    out: dict[str, Any] = {"seeds": seeds}
    for key in ("p_final", "p_auc", "success"):
        out[key] = paired_t_interval([done[arm, variant, s][key] - done[base, variant, s][key] for s in seeds])
    a = [done[arm, variant, s]["scores"] for s in seeds]
    b = [done[base, variant, s]["scores"] for s in seeds]
    out["success_task_bootstrap"] = paired_difference(a, b, "success")
    return out


ARM_HEADER = (
    "| arm | seeds | probe before | probe after last update (per seed) | probe mean over updates | "
    "held-out success (per seed) |\n|---|---|---|---|---|---|"
)
PAIR_HEADER = (
    "| paired difference | seeds | Δ probe after last update [95% t] | Δ probe mean [95% t] | Δ success [95% t] | "
    "Δ success [task bootstrap] | seeds for ±δ |\n|---|---|---|---|---|---|---|"
)


def _ci(x: dict[str, Any]) -> str:
    return f"{x['mean']:+.3f} [{x['ci95'][0]:+.3f}, {x['ci95'][1]:+.3f}]"


def _per_seed(got: list[dict[str, Any]], key: str, fmt: str) -> str:
    return ", ".join(format(g[key], fmt) for g in got)


def arm_row(arm: str, got: list[dict[str, Any]]) -> str:
    def m(key: str) -> float:
        return sum(g[key] for g in got) / len(got)

    return (
        f"| {arm} | {len(got)} | {m('p_start'):.3f} | {m('p_final'):.3f} ({_per_seed(got, 'p_final', '.3f')}) | "
        f"{m('p_auc'):.3f} | {m('success'):.3f} ({_per_seed(got, 'success', '.2f')}) |"
    )


def report(out: Path, delta: float) -> str:
    done = load_all(out)
    lines = ["# CueGym learning study", ""]
    for variant in VARIANTS:
        arms = [a for a in ARMS if any(v == variant and x == a for x, v, _ in done)]
        if not arms:
            continue
        lines += [f"## Gym variant `{variant}`", "", ARM_HEADER]
        for arm in arms:
            seeds = sorted(s for a, v, s in done if a == arm and v == variant)
            lines.append(arm_row(arm, [done[arm, variant, s] for s in seeds]))
        lines += ["", PAIR_HEADER]
        for arm, base in COMPARISONS:
            d = paired(done, variant, arm, base)
            if d is not None:
                lines.append(
                    f"| {arm} − {base} | {len(d['seeds'])} | {_ci(d['p_final'])} | {_ci(d['p_auc'])} | "
                    f"{_ci(d['success'])} | {_ci(d['success_task_bootstrap'])} | "
                    f"{seeds_needed(d['p_final']['sd'], delta)} |"
                )
        lines.append("")
    text = "\n".join(lines)
    (out / "results.md").write_text(text + "\n")
    (out / "results.json").write_text(
        json.dumps({f"{v}/{a}/seed{s}": r for (a, v, s), r in done.items()}, indent=1) + "\n"
    )
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="train and evaluate every (variant, seed, arm), then write the report")
    run.add_argument("--arms", nargs="+", default=["grpo", "csd", "csd_ref"], choices=ARMS)
    run.add_argument("--variants", nargs="+", default=["cue"], choices=tuple(VARIANTS))
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    run.add_argument("--steps", type=int, default=6)
    run.add_argument("--tasks", type=int, default=42)
    run.add_argument("--trials", type=int, default=2)
    run.add_argument("--jobs", type=int, default=1)
    run.add_argument("--out", default="runs/cue_study")
    run.add_argument("--delta", type=float, default=0.05, help="the half-width the 'seeds for ±δ' column aims at")
    rep = sub.add_parser("report", help="rewrite results.md / results.json from the saved pairs")
    rep.add_argument("--out", default="runs/cue_study")
    rep.add_argument("--delta", type=float, default=0.05)
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    if args.cmd == "run":
        # seed by seed, variant by variant, every arm in turn: a study stopped early has complete pairs
        order = [(a, v, s) for s in args.seeds for v in args.variants for a in args.arms]
        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(run_pair, a, v, s, args, out): (a, v, s) for a, v, s in order}
            for future in as_completed(futures):
                a, v, s = futures[future]
                got = future.result()
                print(
                    f"[{time.perf_counter() - began:6.0f}s] {v} {a} seed {s}: probe {got['p_start']:.3f} -> "
                    f"{got['p_final']:.3f} (mean {got['p_auc']:.3f}), success {got['success']:.3f}, "
                    f"fit {got['fit_s']:.0f}s eval {got['eval_s']:.0f}s",
                    flush=True,
                )
    print(report(out, args.delta))


if __name__ == "__main__":
    main()
