"""Learning study: does the recipe make the embedded agent better, and does CSD add to GRPO?

Arms, all from the same SFT'd start (``assets/agent-persuade``), same data, steps and seeds:
  sft          — no RL (the starting checkpoint);
  grpo         — GRPO only (``AgentGRPO``, no coach);
  csd          — GRPO + CSD (``configs/agent_csd.yaml`` as is);
  csd_placebo  — GRPO + CSD where the teacher sees placebo notes only (other tasks' notes): the control.
Each trained arm runs ``mimesis-pl fit`` with the main job's config (only the arm's differences and the
step count overridden), then every final checkpoint is evaluated on held-out test tasks with
``mimesis-pl test`` (``configs/eval_persuade.yaml``). Scores: avg@n per task, averaged over seeds; 95%
intervals by bootstrap over tasks. Writes ``results.json``, ``results.md`` and ``learning_study.png``.

    python bench/learning_study.py run --seeds 0 1 2 3 4 --steps 16 --tasks 42 --trials 2 --val-every 4 \
        --out runs/learning_study
    python bench/learning_study.py compare assets/agent-persuade runs/agent_csd/version_0/hf/final
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling study_stats, however this file is loaded

from study_stats import (  # noqa: E402
    bootstrap_ci,
    newest_version,
    own_trials,
    paired_difference,
    per_task_scores,
    quarter_means,
    steps_to_threshold,
    summarise,
    task_means,
)

__all__ = [
    "bootstrap_ci",
    "newest_version",
    "own_trials",
    "paired_difference",
    "per_task_scores",
    "quarter_means",
    "steps_to_threshold",
    "summarise",
    "task_means",
]
ARMS = ("sft", "grpo", "csd", "csd_placebo")
MAIN_CONFIG = REPO / "configs" / "agent_csd.yaml"
EVAL_CONFIG = REPO / "configs" / "eval_persuade.yaml"
HELD_OUT_FILES = ["assets/data/persuade/test/*.parquet"]
VAL_TAGS = ("val/reward", "val/success_rate")
CURVE_TAGS = (
    *VAL_TAGS,
    "rollout/episode_reward_mean",
    "rollout/groups_with_signal",
    "train/csd/gate_mean",
    "train/csd/teacher_gap_mean",
    "train/csd/gate_active_ratio",
    "train/csd/placebo_share",
    # split by turns that restate the opening (lapses) vs the rest (mimesis_pl.csd.evidence.lapse_turns)
    "train/csd/teacher_gap_mean/lapse",
    "train/csd/teacher_gap_mean/steady",
    "train/csd/gate_mean/lapse",
    "train/csd/gate_mean/steady",
)


# -- pure pieces -----------------------------------------------------------------------------------


def arm_config(
    base: dict[str, Any],
    arm: str,
    seed: int,
    steps: int,
    save_dir: str,
    val_every: int | None = None,
    val_prompts: int | None = None,
) -> dict[str, Any]:
    """The main job's config changed only where the arm differs (a new dict; ``base`` is unchanged).

    ``val_every``: greedy held-out validation (the test tasks, first ``val_prompts``) before training and every
    that many steps, for steps-to-threshold curves; the same for every arm.
    """
    if arm not in ARMS[1:]:
        raise ValueError(f"arm must be one of {ARMS[1:]} to train, got {arm!r}")
    config = json.loads(json.dumps(base))
    config["seed_everything"] = seed
    trainer = config["trainer"]
    trainer["max_steps"] = steps
    trainer["logger"]["init_args"].update({"save_dir": save_dir, "name": f"{arm}_seed{seed}"})
    trainer["callbacks"] = [c for c in trainer["callbacks"] if not c["class_path"].endswith("ModelCheckpoint")]
    init_args = config["model"]["init_args"]
    if arm == "grpo":  # no coach stage, no CSD term
        config["model"]["class_path"] = "mimesis_pl.modules.AgentGRPO"
        for key in ("csd", "coaching"):
            init_args.pop(key, None)
    if arm == "csd_placebo":
        init_args.setdefault("coaching", {})["placebo_only"] = True
    if val_every is not None:
        init_args["validation"] = {
            "val_every_n_steps": val_every,
            "val_before_train": True,
            "val_at_end": True,
            "max_prompts": val_prompts,
            "best_metric": None,
        }
        config["data"]["init_args"]["val_files"] = list(HELD_OUT_FILES)
    return config


def start_model_of(config: dict[str, Any]) -> str:
    """The checkpoint a config starts from (``model.init_args.policy.model_path``)."""
    return config["model"]["init_args"]["policy"]["model_path"]


# -- running ---------------------------------------------------------------------------------------


def _run(cmd: list[str], log: Path) -> float:
    started = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, check=False, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}); see {log}")
    return time.perf_counter() - started


def train(
    arm: str,
    seed: int,
    steps: int,
    out: Path,
    val_every: int | None = None,
    val_prompts: int | None = None,
    base_config: Path = MAIN_CONFIG,
) -> tuple[Path, float]:
    base = yaml.safe_load(Path(base_config).read_text())
    config = arm_config(base, arm, seed, steps, str(out / "runs"), val_every=val_every, val_prompts=val_prompts)
    path = out / "configs" / f"{arm}_seed{seed}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    seconds = _run(
        [sys.executable, "-m", "mimesis_pl.cli", "fit", "--config", str(path)], out / f"fit_{arm}_seed{seed}.log"
    )
    run = newest_version(out / "runs" / f"{arm}_seed{seed}")  # by number: version_10 after version_9 (E27)
    return run, seconds


def evaluate(model: str | Path, out_dir: Path, seed: int, tasks: int | None, trials: int) -> tuple[dict, float]:
    cmd = [
        sys.executable,
        "-m",
        "mimesis_pl.cli",
        "test",
        "--config",
        str(EVAL_CONFIG),
        f"--seed_everything={seed}",
        f"--model.init_args.agent.model_path={model}",
        f"--model.init_args.out_dir={out_dir}",
        f"--model.init_args.n_trials={trials}",
        f"--model.init_args.ks=[1,{trials}]" if trials > 1 else "--model.init_args.ks=[1]",
        f"--trainer.logger.init_args.save_dir={out_dir / 'tb'}",
    ]
    if tasks is not None:
        cmd.append(f"--data.init_args.tasks_per_gym={tasks}")
    out_dir.mkdir(parents=True, exist_ok=True)
    seconds = _run(cmd, out_dir / "eval.log")
    rows = [json.loads(line) for line in (out_dir / "trials.jsonl").read_text().splitlines() if line.strip()]
    # only this evaluation's trials: the folder may hold another checkpoint's or another seed's (E27)
    results = json.loads((out_dir / "results.json").read_text())
    return per_task_scores(own_trials(rows, results)), seconds


def scalars(run: Path) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    tags = [tag for tag in events.Tags()["scalars"] if tag in CURVE_TAGS]
    out: dict[str, Any] = {tag: [e.value for e in events.Scalars(tag)] for tag in tags}
    for tag in tags:  # validation runs every N steps: keep its step axis for steps-to-threshold
        if tag in VAL_TAGS:
            out[f"{tag}@steps"] = [[e.step, e.value] for e in events.Scalars(tag)]
    return out


PAIR_KEYS = ("steps", "tasks", "trials", "val_every", "val_tasks", "config")


def pair_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What a finished (arm, seed) result depends on; a saved result is reused only when these match: the flags,
    and the content of the base config and of the evaluation config (an edited file at the same path: E27)."""
    settings = {key: getattr(args, key, None) for key in PAIR_KEYS}
    settings["config_sha256"] = file_sha256(Path(getattr(args, "config", None) or MAIN_CONFIG))
    settings["eval_config_sha256"] = file_sha256(EVAL_CONFIG)
    return settings


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def pair_order(arms: list[str], seeds: list[int]) -> list[tuple[str, int]]:
    """Seed by seed, every arm in turn: the arms alternate, so a slower stretch of the machine or a study stopped
    early costs every arm alike, and each finished seed is a complete set of arms."""
    return [(arm, seed) for seed in seeds for arm in arms]


def load_pair(path: Path, settings: dict[str, Any]) -> dict[str, Any] | None:
    """A saved (arm, seed) result, or ``None``; one saved under other settings is an error, never mixed in."""
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    if saved.get("settings") != settings:
        raise SystemExit(
            f"{path} was run with {saved.get('settings')}, not {settings}: use another --out or delete the file"
        )
    return saved["result"]


def run_one(arm: str, seed: int, args: argparse.Namespace, out: Path, start_model: str) -> dict[str, Any]:
    """Train (unless ``sft``) and evaluate one arm for one seed; saved under ``out/pairs`` as it finishes, so a
    study that stops part-way is resumed by running the same command again."""
    saved_at = out / "pairs" / f"{arm}_seed{seed}.json"
    saved = load_pair(saved_at, pair_settings(args))
    if saved is not None:
        return saved
    result = _run_one(arm, seed, args, out, start_model)
    saved_at.parent.mkdir(parents=True, exist_ok=True)
    tmp = saved_at.with_suffix(".tmp")
    tmp.write_text(json.dumps({"settings": pair_settings(args), "result": result}))
    tmp.replace(saved_at)
    return result


def _run_one(arm: str, seed: int, args: argparse.Namespace, out: Path, start_model: str) -> dict[str, Any]:
    if arm == "sft":
        model, fit_s, curves = REPO / start_model, 0.0, None
    else:
        val_every = getattr(args, "val_every", None)
        base_config = getattr(args, "config", None) or MAIN_CONFIG
        val_prompts = (getattr(args, "val_tasks", None) or args.tasks) if val_every else None
        run, fit_s = train(arm, seed, args.steps, out, val_every, val_prompts, base_config)
        model, curves = run / "hf" / "final", scalars(run)
    scores, eval_s = evaluate(model, out / "eval" / f"{arm}_seed{seed}", seed, args.tasks, args.trials)
    return {"scores": scores, "curves": curves, "fit_s": fit_s, "eval_s": eval_s}


def run_study(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    start_model = start_model_of(yaml.safe_load(Path(getattr(args, "config", None) or MAIN_CONFIG).read_text()))
    results: dict[str, Any] = {"arms": {}, "curves": {}, "seconds": {}, "settings": vars(args).copy()}
    results["settings"]["start_model"] = start_model
    results["settings"]["date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    began = time.perf_counter()
    pairs = pair_order(args.arms, args.seeds)
    done: dict[tuple[str, int], dict[str, Any]] = {}
    if getattr(args, "partial", False):
        return partial_results(args, out, results)
    # Each pair is a chain of subprocesses (fit, then test); `--jobs` of them run side by side.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_one, arm, seed, args, out, start_model): (arm, seed) for arm, seed in pairs}
        for future in as_completed(futures):
            arm, seed = futures[future]
            done[arm, seed] = got = future.result()
            reward = sum(s["reward"] for s in got["scores"].values()) / max(1, len(got["scores"]))
            print(
                f"[{time.perf_counter() - began:7.0f}s] {arm} seed {seed}: fit {got['fit_s']:.0f}s "
                f"eval {got['eval_s']:.0f}s reward {reward:.3f}",
                flush=True,
            )
    results["seconds"]["wall"] = round(time.perf_counter() - began, 1)
    results["seconds"]["total"] = run_time_per_slot(done, args.jobs)
    return finish_results(results, done, args.arms, args.seeds, out, "results")


def run_time_per_slot(done: dict[tuple[str, int], dict[str, Any]], jobs: int) -> float:
    """The runs' own fit + eval seconds, summed and divided over the ``jobs`` side-by-side slots: the study's
    cost also when some runs were read back from ``out/pairs`` by a resumed invocation."""
    return round(sum(got["fit_s"] + got["eval_s"] for got in done.values()) / max(1, jobs), 1)


def partial_results(args: argparse.Namespace, out: Path, results: dict[str, Any]) -> dict[str, Any]:
    """The report of a study still running or stopped part-way: the seeds whose every arm is saved under
    ``out/pairs`` (so every arm has the same seeds and the pairing holds), written as ``results_partial.*``."""
    settings = pair_settings(args)
    saved = {
        (arm, seed): got
        for arm in args.arms
        for seed in args.seeds
        if (got := load_pair(out / "pairs" / f"{arm}_seed{seed}.json", settings)) is not None
    }
    seeds = [seed for seed in args.seeds if all((arm, seed) in saved for arm in args.arms)]
    if not seeds:
        raise SystemExit(f"no seed has every arm saved under {out / 'pairs'} yet")
    results["settings"].update(seeds=seeds, planned_seeds=list(args.seeds), partial=True)
    results["seconds"]["total"] = run_time_per_slot(saved, args.jobs)
    return finish_results(results, saved, args.arms, seeds, out, "results_partial")


def finish_results(
    results: dict[str, Any], done: dict, arms: list[str], seeds: list[int], out: Path, name: str
) -> dict[str, Any]:
    """Summaries, pairs and steps-to-threshold of ``done`` over ``arms`` × ``seeds``; writes ``name``.json/.md."""
    for arm in arms:
        for seed in seeds:
            got = done[arm, seed]
            if got["curves"] is not None:
                results["curves"][f"{arm}/seed{seed}"] = got["curves"]
            results["seconds"][f"{arm}/seed{seed}"] = {"fit": round(got["fit_s"], 1), "eval": round(got["eval_s"], 1)}
        results["arms"][arm] = summarise([done[arm, seed]["scores"] for seed in seeds])
    results["paired"] = paired_results(done, arms, seeds)
    threshold = results["settings"].get("val_threshold")
    if results["settings"].get("val_every") and threshold is not None:
        results["steps_to_threshold"] = {
            arm: [
                steps_to_threshold((done[arm, s]["curves"] or {}).get("val/reward@steps", []), threshold) for s in seeds
            ]
            for arm in arms
            if arm != "sft"
        }
    (out / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
    write_report(results, out, name)
    return results


def paired_results(done: dict, arms: list[str], seeds: list[int]) -> dict[str, Any]:
    """``csd − grpo`` and ``csd − csd_placebo`` (and ``grpo − sft``) per-task paired differences, where both ran."""
    out = {}
    for arm, baseline in (("csd", "grpo"), ("csd", "csd_placebo"), ("grpo", "sft")):
        if arm in arms and baseline in arms:
            a = [done[arm, s]["scores"] for s in seeds]
            b = [done[baseline, s]["scores"] for s in seeds]
            out[f"{arm} - {baseline}"] = {m: paired_difference(a, b, m) for m in ("reward", "success")}
    return out


# -- report ----------------------------------------------------------------------------------------


def lapse_pair(split: dict[str, list[float]], name: str, fmt: str) -> str:
    """``"lapse / steady"`` means of one diagnostic over an arm's curves (``—`` where there is none)."""
    lapse, steady = split.get(f"train/csd/{name}/lapse", []), split.get(f"train/csd/{name}/steady", [])
    if not lapse and not steady:
        return "—"
    return " / ".join(format(sum(v) / len(v), fmt) if v else "—" for v in (lapse, steady))


def markdown_table(results: dict[str, Any]) -> str:
    header = (
        "| arm | held-out avg@n reward [95% CI] | held-out success [95% CI] | per-seed reward | "
        "train reward first → last quarter | gate mean | teacher gap | gate lapse / steady | gap lapse / steady |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for arm, s in results["arms"].items():
        r, c = s["reward"], s["success"]
        firsts, lasts, gates, gaps = [], [], [], []
        for key, curve in results["curves"].items():
            if key.startswith(f"{arm}/"):
                f, l_ = quarter_means(curve.get("rollout/episode_reward_mean", []))
                firsts.append(f)
                lasts.append(l_)
                gates += curve.get("train/csd/gate_mean", [])
                gaps += curve.get("train/csd/teacher_gap_mean", [])
        split = {
            tag: [
                v for key, curve in results["curves"].items() if key.startswith(f"{arm}/") for v in curve.get(tag, [])
            ]
            for tag in CURVE_TAGS
            if tag.endswith(("/lapse", "/steady"))
        }

        train = f"{sum(firsts) / len(firsts):.3f} → {sum(lasts) / len(lasts):.3f}" if firsts else "—"
        gate = f"{sum(gates) / len(gates):.3f}" if gates else "—"
        gap = f"{sum(gaps) / len(gaps):+.3f}" if gaps else "—"
        seeds = ", ".join(f"{v:.3f}" for v in r["per_seed"])
        lines.append(
            f"| {arm} | {r['mean']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | "
            f"{c['mean']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}] | {seeds} | {train} | {gate} | {gap} | "
            f"{lapse_pair(split, 'gate_mean', '.3f')} | {lapse_pair(split, 'teacher_gap_mean', '+.3f')} |"
        )
    return "\n".join(lines)


def paired_table(results: dict[str, Any]) -> str:
    """The paired per-task differences with their intervals (tasks shared by both arms)."""
    paired = results.get("paired") or {}
    if not paired:
        return "(no paired comparison: run both arms of a pair)"
    lines = [
        "Paired per-task differences (per-task means over seeds; bootstrap over tasks):",
        "",
        "| difference | reward [95% CI] | success [95% CI] | tasks |",
        "|---|---|---|---|",
    ]
    for name, d in paired.items():
        r, c = d["reward"], d["success"]
        lines.append(
            f"| {name} | {r['mean']:+.3f} [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] | "
            f"{c['mean']:+.3f} [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}] | {r['tasks']} |"
        )
    return "\n".join(lines)


def threshold_line(results: dict[str, Any]) -> str:
    got = results.get("steps_to_threshold")
    if not got:
        return "(no steps-to-threshold: run with --val-every N)"
    thr = results["settings"].get("val_threshold")
    parts = [f"{arm}: {', '.join('never' if s is None else str(s) for s in steps)}" for arm, steps in got.items()]
    return f"Steps to held-out val/reward ≥ {thr} (per seed): " + "; ".join(parts)


def write_report(results: dict[str, Any], out: Path, name: str = "results") -> None:
    st = results["settings"]
    minutes = results["seconds"]["total"] / 60
    setup = (
        f"Date: {st['date']}. Start: `{st['start_model']}`. Seeds {st['seeds']}, {st['steps']} RL steps per run "
        f"(the base config otherwise), held-out: {st['tasks'] or 'all'} PersuadeGym test tasks × "
        f"{st['trials']} sampled trials per seed. "
        + (
            f"PARTIAL: the seeds with every arm finished, of {st['planned_seeds']} planned; "
            f"{minutes:.1f} min of run time per job slot so far."
            if st.get("partial")
            else f"Run time {minutes:.1f} min per job slot (the runs' fit + eval time over {st.get('jobs', 1)} slots"
            + (
                f"; this invocation's wall time {results['seconds']['wall'] / 60:.1f} min)."
                if "wall" in results["seconds"]
                else ")."
            )
        )
    )
    seeds = " ".join(map(str, st.get("planned_seeds") or st["seeds"]))
    command = (
        f"Command: `python bench/learning_study.py run --seeds {seeds} --steps {st['steps']} "
        f"--tasks {st['tasks']} --trials {st['trials']} --jobs {st.get('jobs', 1)}"
        + "".join(
            f" --{key.replace('_', '-')} {st[key]}"
            for key in ("val_every", "val_tasks", "val_threshold", "config")
            if st.get(key) is not None and (key != "val_threshold" or st.get("val_every"))
        )
        + f" --out {st['out']}`"
    )
    text = [
        "# Learning study",
        "",
        setup,
        "",
        "Intervals: percentile bootstrap over tasks (per-task means over seeds and trials).",
        "",
        markdown_table(results),
        "",
        paired_table(results),
        "",
        threshold_line(results),
        "",
        command,
        "",
    ]
    (out / f"{name}.md").write_text("\n".join(text))
    plot(results, out / ("learning_study.png" if name == "results" else f"learning_study_{name}.png"))


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    colours = {"sft": "grey", "grpo": "tab:blue", "csd": "tab:green", "csd_placebo": "tab:orange"}
    for key, curve in sorted(results["curves"].items()):
        arm = key.split("/")[0]
        ys = curve.get("rollout/episode_reward_mean", [])
        ax1.plot(
            range(1, len(ys) + 1),
            ys,
            color=colours.get(arm),
            alpha=0.6,
            label=arm if key.endswith("seed" + str(results["settings"]["seeds"][0])) else None,
        )
    ax1.set(xlabel="RL step", ylabel="rollout/episode_reward_mean", title="Training reward (each seed)")
    ax1.legend()
    arms = list(results["arms"])
    means = [results["arms"][a]["reward"]["mean"] for a in arms]
    errs = [
        [m - results["arms"][a]["reward"]["ci95"][0] for a, m in zip(arms, means)],
        [results["arms"][a]["reward"]["ci95"][1] - m for a, m in zip(arms, means)],
    ]
    ax2.bar(arms, means, yerr=errs, capsize=6, color=[colours.get(a) for a in arms])
    ax2.set(ylabel="held-out avg@n reward", title="Held-out score, 95% bootstrap CI over tasks")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def compare(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    rows = []
    for model in args.models:
        scores, seconds = evaluate(
            Path(model).resolve(), out / Path(model).as_posix().replace("/", "_"), args.seed, args.tasks, args.trials
        )
        s = summarise([scores])
        rows.append(
            f"| `{model}` | {s['reward']['mean']:.3f} [{s['reward']['ci95'][0]:.3f}, {s['reward']['ci95'][1]:.3f}] | "
            f"{s['success']['mean']:.3f} [{s['success']['ci95'][0]:.3f}, {s['success']['ci95'][1]:.3f}] | "
            f"{s['tasks']} | {seconds:.0f}s |"
        )
    print("| model | held-out avg@n reward [95% CI] | success [95% CI] | tasks | eval time |\n|---|---|---|---|---|")
    print("\n".join(rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="train every arm for every seed, evaluate, write the report")
    run.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    run.add_argument("--steps", type=int, default=16)
    run.add_argument("--tasks", type=int, default=None, help="held-out tasks (first N by id; default all 42)")
    run.add_argument("--trials", type=int, default=2)
    run.add_argument("--out", default="runs/learning_study")
    run.add_argument("--jobs", type=int, default=1, help="(arm, seed) runs side by side (each fit uses ~1 core)")
    run.add_argument(
        "--val-every", type=int, default=None, help="held-out greedy validation every N steps (steps-to-threshold)"
    )
    run.add_argument(
        "--val-tasks", type=int, default=None, help="held-out tasks each periodic validation plays (default: --tasks)"
    )
    run.add_argument("--val-threshold", type=float, default=0.7, help="the val/reward a run must reach")
    run.add_argument("--config", default=None, help="the base config of every arm (default: the main job's)")
    run.add_argument(
        "--partial",
        action="store_true",
        help="run nothing: report the seeds whose every arm is saved so far (results_partial.md)",
    )
    cmp_ = sub.add_parser("compare", help="evaluate checkpoints side by side on the held-out tasks")
    cmp_.add_argument("models", nargs="+")
    cmp_.add_argument("--tasks", type=int, default=None)
    cmp_.add_argument("--trials", type=int, default=2)
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.add_argument("--out", default="runs/eval_compare")
    rep = sub.add_parser("report", help="rewrite results.md and the PNG from results.json")
    rep.add_argument("--out", default="runs/learning_study")
    args = parser.parse_args(argv)
    if args.cmd == "run":
        run_study(args)
    elif args.cmd == "compare":
        compare(args)
    else:
        out = Path(args.out)
        write_report(json.loads((out / "results.json").read_text()), out)


if __name__ == "__main__":
    main()
