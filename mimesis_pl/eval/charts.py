"""PNG charts of evaluation results (matplotlib, optional).

matplotlib is not a core dependency: when it is missing the chart writers log a warning and return
nothing, so an evaluation never fails for want of a picture.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimesis_pl.eval.io import write_bytes_atomic

if TYPE_CHECKING:
    from mimesis_pl.eval.replay.records import ReplaySummary
    from mimesis_pl.eval.trials.aggregate import GymSummary

log = logging.getLogger(__name__)


def _pyplot() -> Any | None:
    try:
        import matplotlib
    except ImportError:
        log.warning("matplotlib is not installed; PNG charts are skipped (pip install matplotlib)")
        return None
    matplotlib.use("Agg", force=False)  # headless: no display on eval machines
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return write_bytes_atomic(path, buffer.getvalue())


def _safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name) or "gym"


def write_gym_charts(summaries: Mapping[str, GymSummary], ks: Sequence[int], out_dir: str | Path) -> list[Path]:
    """One ``<gym>.png`` per gym: pass@k and pass^k bars for every k, avg@n as a line."""
    plt = _pyplot()
    if plt is None:
        return []
    paths = []
    for gym, s in summaries.items():
        fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(ks), 3.2))
        xs = list(range(len(ks)))
        at = [s.pass_at_k.get(k) or 0.0 for k in ks]
        hat = [s.pass_hat_k.get(k) or 0.0 for k in ks]
        ax.bar([x - 0.2 for x in xs], at, width=0.4, label="pass@k", color="#4C72B0")
        ax.bar([x + 0.2 for x in xs], hat, width=0.4, label="pass^k", color="#DD8452")
        if s.avg_at_n is not None:
            ax.axhline(s.avg_at_n, color="#55A868", linestyle="--", label=f"avg@{s.n_trials} = {s.avg_at_n:.3f}")
        ax.set_xticks(xs, [f"k={k}" for k in ks])
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("rate")
        ax.set_title(f"{gym}: {s.tasks} tasks × n={s.n_trials}; unscored {s.unscored_trials}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        paths.append(_save(plt, fig, Path(out_dir) / f"{_safe_name(gym)}.png"))
    return paths


def write_replay_chart(summary: ReplaySummary, path: str | Path) -> Path | None:
    """Stacked bars per case: passed / failed / unscored requests and skipped steps."""
    plt = _pyplot()
    if plt is None or not summary.per_case:
        return None
    cases = list(summary.per_case)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.5 * len(cases) + 1.5), 3.6))
    bottom = [0.0] * len(cases)
    for part, color in (("passed", "#55A868"), ("failed", "#C44E52"), ("unscored", "#8172B2"), ("skipped", "#CCB974")):
        values = [summary.per_case[c][part] for c in cases]
        ax.bar(cases, values, bottom=bottom, label=part, color=color)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel("requests / steps")
    ax.yaxis.get_major_locator().set_params(integer=True)
    rate = "—" if summary.pass_rate is None else f"{summary.pass_rate:.3f}"
    ax.set_title(f"replay: pass rate {rate} over {summary.scored} scored requests", fontsize=9)
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    ax.legend(fontsize=7)
    return _save(plt, fig, Path(path))
