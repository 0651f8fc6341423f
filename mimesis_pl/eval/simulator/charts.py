"""The suites' PNGs: grouped bars (matplotlib through the eval charts' headless set-up; optional)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mimesis_pl.eval.charts import _pyplot, _save

COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B2", "#937860")


def bar_chart(
    path: Path,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    ylabel: str,
    title: str,
    ylim: tuple[float, float] | None = None,
) -> Path | None:
    """Grouped bars: one group per label, one bar per series (None drawn as 0)."""
    plt = _pyplot()
    if plt is None or not labels:
        return None
    n = max(len(series), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(labels) * max(1, n / 2) + 2.0), 3.4))
    for i, (name, values) in enumerate(series.items()):
        xs = [x - 0.4 + width * (i + 0.5) for x in range(len(labels))]
        ax.bar(xs, [v or 0.0 for v in values], width=width, label=name, color=COLORS[i % len(COLORS)])
    ax.set_xticks(list(range(len(labels))), list(labels), fontsize=8)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(plt, fig, Path(path))
