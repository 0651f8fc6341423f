"""The SOUL report (pure): the sets without a scored row, and the markdown with per-set scores per seed, axes,
the headline beside the paper's Overall, the published rows and what is comparable with the paper."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from mimesis_pl.eval.simulator.soul.data import soul_names
from mimesis_pl.eval.simulator.suite import fmt
from mimesis_pl.eval.tables import markdown_table
from mimesis_pl.tasks.registry import SOUL_AXIS_ORDER, soul_axes

HEADLINE = "SOUL-Index (axis mean)"
PAPER_OVERALL = "Overall (the paper's: row-weighted all/score)"
ROW_WEIGHTED = "Row-weighted task score (ours)"


def sets_without_score(per_seed: Mapping[int, Mapping[str, Any]], dropped: Mapping[int, str]) -> dict[int, list[str]]:
    """``{seed: [set, …]}`` of the kept seeds' sets that were run but have no scored row."""
    out = {}
    for seed, summary in per_seed.items():
        empty = [src for src, score in summary["datasets"].items() if score is None]
        if seed not in dropped and empty:
            out[seed] = empty
    return out


def describe_unscored(unscored: Mapping[int, list[str]], failed: Mapping[int, Mapping[str, Counter]]) -> str:
    return "; ".join(
        f"seed {seed}: " + ", ".join(f"{src} ({dict(failed[seed].get(src, {})) or 'no rows'})" for src in sets)
        for seed, sets in unscored.items()
    )


def _pm(stat: dict[str, Any]) -> str:
    if stat.get("mean") is None:
        return "—"
    return fmt(stat["mean"]) if stat.get("std") is None else f"{fmt(stat['mean'])} ± {fmt(stat['std'])}"


def _seed_head(seeds: list[int], dropped: set[int]) -> list[str]:
    return [
        "set",
        "axis",
        "rows",
        *(f"seed {x}" + (" (dropped)" if x in dropped else "") for x in seeds),
        "mean ± std",
        "unscored",
    ]


def _set_rows(r: dict[str, Any]) -> list[list[str]]:
    """One line per set run: its axis, rows, score per seed, mean ± std over seeds, unscored rows (all seeds)."""
    seeds, s = r["seeds"], r["summary"]
    axis_of = {src: a for a, sets in soul_axes().items() for src in sets}
    names = soul_names()
    rows = []
    for src in r["sets"]:
        unscored = sum(sum(per.get(src, {}).values()) for per in r["unscored_by_seed"].values())
        rows.append(
            [
                names[src],
                axis_of[src],
                str(r["rows_per_set"][src]),
                *(fmt(r["per_seed"][x]["datasets"].get(src)) for x in seeds),
                _pm(s["datasets"][src]),
                str(unscored),
            ]
        )
    return rows


def _aggregate_rows(r: dict[str, Any]) -> list[list[str]]:
    """The axes, the headline, the paper's Overall, our row-weighted task score and AlignX (combined), per seed and
    mean ± std."""
    s, per_seed = r["summary"], [r["per_seed"][x] for x in r["seeds"]]
    lines = [(f"**{a}**", [p["axes"][a] for p in per_seed], s["axes"][a]) for a in SOUL_AXIS_ORDER]
    keys = ((f"**{HEADLINE}**", "soul_index"), (PAPER_OVERALL, "overall"), (ROW_WEIGHTED, "overall_row_weighted"))
    for label, key in keys:
        lines.append((label, [p[key] for p in per_seed], s[key]))
    lines.append(("AlignX (combined)", [p["alignx_combined"] for p in per_seed], s["alignx_combined"]))
    return [[label, "", "", *(fmt(v) for v in values), _pm(stat), ""] for label, values, stat in lines]


def _published_rows(r: dict[str, Any]) -> list[list[str]]:
    """Our run first (headline / the paper's Overall), then the paper's models."""
    s = r["summary"]
    ours = [_pm(s["axes"][a]) for a in SOUL_AXIS_ORDER]
    pub_rows = [
        [
            f"**{r['simulator']}** (ours, {HEADLINE} / Overall)",
            *ours,
            f"{_pm(s['soul_index'])} / {_pm(s['overall'])}",
        ]
    ]
    pub_rows += [[m, *(fmt(v[a]) for a in SOUL_AXIS_ORDER), fmt(v["Overall"])] for m, v in r["published"].items()]
    return pub_rows


def _notes(r: dict[str, Any]) -> str:
    """How the scores are made, what was left out, and what is comparable with the paper."""
    names = soul_names()
    missing = ", ".join(names[x] for x in r["sets_missing"]) or "none"
    unscored = ", ".join(f"{k} {v}" for k, v in sorted(r["unscored"].items())) or "none"
    return (
        f"\nScores are task scores × 100 (validation mode: no format gate; the simulator sampled at temperature "
        f"{r['sampling']['temperature']:g}, top-p {r['sampling']['top_p']:g}, each request seeded with its run's "
        f"seed). **{HEADLINE}** (our headline) = mean of the axes that have a score, each axis "
        f"the mean of its sets. {PAPER_OVERALL} = the reference's val-core/all/score: the mean over every scored "
        f"row of its all/score, which is the task score except on Sotopia, whose rows count 0.1 × the mean of their "
        f"seven raw judge dimensions (so it can be negative); shown for comparison with the paper only. "
        f"{ROW_WEIGHTED} = the mean of the task scores over every scored row. Unscored rows (judge_failed / "
        f"task_error / no_turns, retried first) are excluded from every mean and counted: {unscored}. Dropped seeds: "
        f"{'; '.join(f'{k}: {v}' for k, v in r['dropped_seeds'].items()) or 'none'}. Sets not run: {missing}.\n"
        + (
            "\n**Sets with no scored row (the headline leaves them out; allowed by allow_unscored_sets):** "
            + "; ".join(f"seed {k}: " + ", ".join(v) for k, v in r["sets_without_score"].items())
            + ".\n"
            if r["sets_without_score"]
            else ""
        )
        + "\nComparable with the paper's SOUL numbers only for a run of all 27 sets on the real validation files, "
        "with the reference's sampling (temperature 1.0, seeds 0-1-2) and its judge and partner models, read "
        f"through the paper's Overall; **{HEADLINE}** and {ROW_WEIGHTED} are ours, not the paper's numbers. "
        "Runs on the sample rows, with scripted counterparts or a subset of sets are not comparable.\n"
    )


def soul_markdown(r: dict[str, Any]) -> str:
    """The report: per-set scores per seed, axes, the headline beside the paper's Overall, published rows."""
    seeds = r["seeds"]
    dropped = {int(k) for k in r["dropped_seeds"]}
    published = (
        "\n## Published (the paper; other models and data — context, not a target; its Overall is "
        "row-weighted over all 27 sets)\n\n"
        + markdown_table(["model", *SOUL_AXIS_ORDER, "Overall"], _published_rows(r))
    )
    return (
        f"# SOUL: {r['simulator']} @ {r['simulator_revision']} (seeds {', '.join(map(str, seeds))})\n\n"
        + markdown_table(_seed_head(seeds, dropped), _set_rows(r) + _aggregate_rows(r))
        + _notes(r)
        + published
    )
