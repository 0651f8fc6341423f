"""Report writers: the JSON results file, a Markdown table, TensorBoard scalars, PNG charts.

Episode results (agent evaluation over gyms) and replay results (teacher forcing) are different
measurements: they are written to separate files and never averaged together (docs/decisions.md E1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_pl.eval.charts import write_gym_charts, write_replay_chart
from mimesis_pl.eval.gym_metrics import extra_metrics_markdown
from mimesis_pl.eval.io import write_json_atomic, write_text_atomic
from mimesis_pl.eval.replay.records import ReplaySummary
from mimesis_pl.eval.tables import markdown_table
from mimesis_pl.eval.trials.aggregate import GymSummary
from mimesis_pl.eval.trials.keys import RunIdentity


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def episode_results(
    summaries: Mapping[str, GymSummary],
    identity: RunIdentity | None = None,
    config: Mapping[str, Any] | None = None,
    gym_metrics: Mapping[str, Any] | None = None,
    gym_notes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON-ready results of an agent evaluation (mode ``"episode"``); ``gym_metrics``/``gym_notes``: extras."""
    return {
        "mode": "episode",
        "identity": None if identity is None else identity.to_dict(),
        "config": dict(config or {}),
        "gyms": {gym: s.to_dict() for gym, s in summaries.items()},
        "gym_metrics": dict(gym_metrics or {}),
        "gym_notes": dict(gym_notes or {}),
    }


def episode_markdown(summaries: Mapping[str, GymSummary], ks: Sequence[int]) -> str:
    """One row per gym: tasks, n, avg@n, pass@k and pass^k for every k, unscored trials, reward."""
    head = [
        "gym",
        "tasks",
        "n",
        "avg@n",
        *[f"pass@{k}" for k in ks],
        *[f"pass^{k}" for k in ks],
        "scored",
        "unscored",
        "missing",
        "reward mean ± std",
    ]
    rows = []
    for gym, s in summaries.items():
        unscored = str(s.unscored_trials)
        if s.unscored_by_kind:
            unscored += " (" + ", ".join(f"{k}: {v}" for k, v in s.unscored_by_kind.items()) + ")"
        reward = f"{_fmt(s.reward.get('mean'))} ± {_fmt(s.reward.get('std'))}"
        cells = [
            gym,
            str(s.tasks),
            str(s.n_trials),
            _fmt(s.avg_at_n),
            *[_fmt(s.pass_at_k.get(k)) for k in ks],
            *[_fmt(s.pass_hat_k.get(k)) for k in ks],
            str(s.scored_trials),
            unscored,
            str(s.missing_trials),
            reward,
        ]
        rows.append(cells)
    note = (
        "\nUnscored trials (simulator, judge, environment or transport failures) are excluded from every "
        "rate, not counted as 0. pass@k / pass^k use only tasks with at least k scored trials.\n"
    )
    return markdown_table(head, rows) + note


def episode_scalars(summaries: Mapping[str, GymSummary], prefix: str = "eval") -> dict[str, float]:
    """Flat ``{"eval/<gym>/pass@1": value, ...}`` for TensorBoard (None values are left out)."""
    out: dict[str, float] = {}
    for gym, s in summaries.items():
        base = f"{prefix}/{gym}"
        values: dict[str, float | None] = {
            "avg@n": s.avg_at_n,
            "success_rate": s.success_rate,
            "unscored_trials": float(s.unscored_trials),
            "reward_mean": s.reward.get("mean"),
            "reward_std": s.reward.get("std"),
        }
        values.update({f"pass@{k}": v for k, v in s.pass_at_k.items()})
        values.update({f"pass^{k}": v for k, v in s.pass_hat_k.items()})
        out.update({f"{base}/{name}": float(v) for name, v in values.items() if v is not None})
    return out


def replay_markdown(summary: ReplaySummary) -> str:
    """Totals, then one row per case."""
    totals = (
        f"Replay (teacher forcing): {summary.requests} requests over {summary.cases} cases; "
        f"pass rate {_fmt(summary.pass_rate)} over {summary.scored} scored; preferred path matched "
        f"{_fmt(summary.preferred_rate)}; {summary.unscored} unscored; {summary.skipped_steps} steps skipped."
    )
    head = ["case", "requests", "passed", "failed", "unscored", "skipped"]
    rows = [[case_id, *(row[k] for k in head[1:])] for case_id, row in summary.per_case.items()]
    return totals + "\n\n" + markdown_table(head, rows)


def replay_scalars(summary: ReplaySummary, prefix: str = "replay") -> dict[str, float]:
    values = {
        "pass_rate": summary.pass_rate,
        "preferred_rate": summary.preferred_rate,
        "unscored": float(summary.unscored),
        "skipped_steps": float(summary.skipped_steps),
        "cases_passed": float(summary.cases_passed),
    }
    return {f"{prefix}/{k}": float(v) for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class ReportFiles:
    """Paths written by a report; ``charts`` is empty when matplotlib is not installed."""

    json: Path
    markdown: Path
    charts: tuple[Path, ...]


def write_episode_report(
    out_dir: str | Path,
    summaries: Mapping[str, GymSummary],
    ks: Sequence[int],
    identity: RunIdentity | None = None,
    config: Mapping[str, Any] | None = None,
    gym_metrics: Mapping[str, Any] | None = None,
    gym_notes: Mapping[str, str] | None = None,
) -> ReportFiles:
    """Write ``results.json``, ``results.md`` and ``charts/<gym>.png`` under ``out_dir``.

    ``gym_metrics`` (:func:`mimesis_pl.eval.gym_metrics.extra_gym_metrics`) adds per-gym extras to both files,
    ``gym_notes`` (:func:`~mimesis_pl.eval.gym_metrics.gym_notes`: grader, data, comparability) a line each.
    """
    out_dir = Path(out_dir)
    results = episode_results(summaries, identity, config, gym_metrics, gym_notes)
    json_path = write_json_atomic(out_dir / "results.json", results)
    markdown = episode_markdown(summaries, ks) + extra_metrics_markdown(gym_metrics or {}, gym_notes)
    markdown += comparability_markdown(gym_notes or {}, shown=set(gym_metrics or {}))
    graders = (config or {}).get("graders") or {}
    if graders:  # which grader scored each gym (the offline rule grader or a served judge)
        markdown += "\nGraders: " + "; ".join(f"{gym}: {how}" for gym, how in sorted(graders.items())) + "\n"
    md_path = write_text_atomic(out_dir / "results.md", markdown)
    charts = write_gym_charts(summaries, ks, out_dir / "charts")
    return ReportFiles(json=json_path, markdown=md_path, charts=tuple(charts))


def comparability_markdown(notes: Mapping[str, str], shown: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """Every gym's comparability note not already written above its per-gym metrics table."""
    rest = {gym: note for gym, note in notes.items() if gym not in shown}
    if not rest:
        return ""
    return "\n## Comparability with UserRL\n\n" + "".join(f"- {gym}: {note}\n" for gym, note in sorted(rest.items()))


def write_replay_report(out_dir: str | Path, summary: ReplaySummary) -> ReportFiles:
    """Write ``replay_results.json``, ``replay_results.md`` and ``charts/replay.png`` under ``out_dir``."""
    out_dir = Path(out_dir)
    json_path = write_json_atomic(out_dir / "replay_results.json", summary.to_dict())
    md_path = write_text_atomic(out_dir / "replay_results.md", replay_markdown(summary))
    chart = write_replay_chart(summary, out_dir / "charts" / "replay.png")
    return ReportFiles(json=json_path, markdown=md_path, charts=(chart,) if chart else ())
