"""The learning study's statistics (pure): per-task scores, bootstrap intervals over tasks, the paired
per-task difference between two arms, steps to a validation threshold, curve quarters.

Imported by ``bench/learning_study.py``; tested on hand-worked values in ``tests/test_learning_study.py``.
"""

from __future__ import annotations

import math
import random
from typing import Any


def bootstrap_ci(values: list[float], n_boot: int = 4000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one value per task)."""
    if not values:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(n_boot))
    lo = means[int((1 - level) / 2 * n_boot)]
    hi = means[min(n_boot - 1, int((1 + level) / 2 * n_boot))]
    return lo, hi


def per_task_scores(trials: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """``{task_id: {"reward": mean reward, "success": share with reward >= 1}}`` over scored trials."""
    rewards: dict[str, list[float]] = {}
    for t in trials:
        if t.get("status") == "scored":
            rewards.setdefault(t["key"]["task_id"], []).append(float(t["reward"]))
    return {
        task: {"reward": sum(r) / len(r), "success": sum(x >= 1.0 - 1e-6 for x in r) / len(r)}
        for task, r in rewards.items()
    }


IDENTITY_FIELDS = ("agent_model", "agent_revision", "simulator", "harness_version")


def own_trials(rows: list[dict[str, Any]], results: dict[str, Any]) -> list[dict[str, Any]]:
    """The latest row of each trial the evaluation that wrote ``results`` (its ``results.json``) reported: rows of
    its identity (agent + revision, simulator, harness) and of each gym's configuration hash in
    ``results["config"]["gym_config_hashes"]``; an older checkpoint's or another seed's rows in the same
    ``trials.jsonl`` are left out (E27)."""
    identity, hashes = results["identity"], results["config"]["gym_config_hashes"]
    latest: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        key = row["key"]
        if all(key.get(f) == identity.get(f) for f in IDENTITY_FIELDS) and hashes.get(key["gym"]) == key.get(
            "gym_config_hash"
        ):
            latest[(key["gym"], key["task_id"], key["trial"])] = row
    return list(latest.values())


def newest_version(folder: Any) -> Any:
    """The ``version_N`` sub-folder of ``folder`` with the largest N (``version_10`` after ``version_9``)."""
    versions = [p for p in folder.iterdir() if p.name.startswith("version_") and p.name[8:].isdigit()]
    if not versions:
        raise FileNotFoundError(f"{folder} holds no version_N run folder")
    return max(versions, key=lambda p: int(p.name[8:]))


def summarise(per_seed: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Mean over seeds per task, then the mean over tasks with a bootstrap interval over tasks."""
    tasks = sorted(set().union(*(s.keys() for s in per_seed))) if per_seed else []
    out: dict[str, Any] = {"tasks": len(tasks), "seeds": len(per_seed)}
    for metric in ("reward", "success"):
        values = []
        for task in tasks:
            got = [s[task][metric] for s in per_seed if task in s]
            values.append(sum(got) / len(got))
        mean = sum(values) / len(values) if values else math.nan
        out[metric] = {
            "mean": mean,
            "ci95": bootstrap_ci(values),
            "per_seed": [sum(s[t][metric] for t in s) / max(1, len(s)) for s in per_seed],
        }
    return out


def task_means(per_seed: list[dict[str, dict[str, float]]], metric: str) -> dict[str, float]:
    """Per task, the mean of ``metric`` over the seeds that scored it."""
    tasks = sorted(set().union(*(s.keys() for s in per_seed))) if per_seed else []
    out = {}
    for task in tasks:
        got = [s[task][metric] for s in per_seed if task in s]
        out[task] = sum(got) / len(got)
    return out


def paired_difference(
    arm: list[dict[str, dict[str, float]]], baseline: list[dict[str, dict[str, float]]], metric: str, seed: int = 0
) -> dict[str, Any]:
    """Paired per-task difference ``arm − baseline`` of ``metric`` (per-task means over seeds) with its bootstrap CI.

    The arms are evaluated on the same tasks, so resampling the tasks' *differences* removes the task-to-task
    spread both arms share: far tighter than comparing two overlapping intervals. Only tasks scored in both
    arms count (``tasks`` says how many).
    """
    a, b = task_means(arm, metric), task_means(baseline, metric)
    shared = sorted(set(a) & set(b))
    diffs = [a[t] - b[t] for t in shared]
    mean = sum(diffs) / len(diffs) if diffs else math.nan
    return {"mean": mean, "ci95": bootstrap_ci(diffs, seed=seed), "tasks": len(shared)}


def steps_to_threshold(points: list[tuple[int, float]], threshold: float) -> int | None:
    """The first validation step whose value reaches ``threshold`` (``None``: never within the run)."""
    for step, value in sorted(points):
        if value >= threshold:
            return step
    return None


def quarter_means(values: list[float]) -> tuple[float, float]:
    """Mean of the first and of the last quarter of a curve (at least one point each)."""
    if not values:
        return (math.nan, math.nan)
    q = max(1, len(values) // 4)
    return sum(values[:q]) / q, sum(values[-q:]) / q


# Two-sided 95 % Student-t quantiles t_{0.975, df}, df = 1 … 30 (beyond: 1.96 is within 2 %).
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def paired_t_interval(diffs: list[float]) -> dict[str, Any]:
    """Mean of per-seed paired differences with its 95 % t-interval (seed-level: training variance included).

    ``n`` < 2 gives an interval of NaNs; ``sd`` is the sample standard deviation (n − 1).
    """
    n = len(diffs)
    mean = sum(diffs) / n if n else math.nan
    if n < 2:
        return {"mean": mean, "sd": math.nan, "ci95": (math.nan, math.nan), "n": n}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = (_T975[n - 2] if n - 1 <= len(_T975) else 1.96) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci95": (mean - half, mean + half), "n": n}


def seeds_needed(sd: float, delta: float, t: float = 2.0) -> int:
    """Seeds for a paired t-interval of half-width ``delta``: ⌈(t·σ_d / δ)²⌉ (sizing a study from a pilot)."""
    if not delta > 0 or math.isnan(sd):
        return 0
    return max(2, math.ceil((t * sd / delta) ** 2))
