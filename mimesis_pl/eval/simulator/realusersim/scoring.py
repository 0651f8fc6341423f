"""RealUserSim PT3's pure scoring: one condition's Fidelity Index, dimensions, close rate and errors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mimesis_pl.eval.simulator.suite import mean_or_none, mean_sem
from mimesis_pl.eval.simulator.text import FIDELITY_DIMENSIONS
from mimesis_pl.metrics.fidelity import cluster_bootstrap_ci, fidelity_index


def judged_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The cases that talked and were judged (the reference drops every case with an error before aggregating)."""
    return [r for r in rows if r["hits"] is not None and r["termination_reason"] is not None]


def close_percent(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    return [100.0 * (r["termination_reason"] == "close_token") for r in rows]


def user_turns(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    return [float(r["n_user_messages"]) for r in rows]


def pooled(values: Sequence[float]) -> dict[str, float | int | None]:
    """The mean over every value (no per-seed SEM: one pooled number, as the reference reports it)."""
    return {"mean": mean_or_none(values), "sem": None, "n": len(values)}


def condition_summary(
    rows: Sequence[Mapping[str, Any]], seeds: Sequence[int], n_boot: int, bootstrap_seed: int
) -> dict:
    """One condition over its ``rows`` (``seed``, ``user_ip``, ``hits`` or None when the case failed,
    ``termination_reason``, ``n_user_messages``): per seed, FI with failed cases as 0 hits and FI over the judged
    cases only; across seeds, mean ± SEM, and the user-clustered bootstrap CI over every seed pooled (S24). Close %
    and mean user turns are over the judged cases only, every seed pooled, as the reference's (S88)."""
    per_seed = []
    for seed in seeds:
        seed_rows = [r for r in rows if r["seed"] == seed]
        hits = np.array([r["hits"] or [0] * 5 for r in seed_rows], dtype=float).reshape(-1, 5)
        judged = np.array([r["hits"] for r in seed_rows if r["hits"] is not None], dtype=float).reshape(-1, 5)
        talked = judged_rows(seed_rows)
        per_seed.append(
            {
                "seed": seed,
                "n_cases": len(seed_rows),
                "errors": sum(r["hits"] is None for r in seed_rows),
                "fi": fidelity_index(hits) if len(seed_rows) else None,
                "fi_judged_only": fidelity_index(judged) if len(judged) else None,
                "dimensions": {
                    d: float(100 * hits[:, i].mean()) if len(hits) else None for i, d in enumerate(FIDELITY_DIMENSIONS)
                },
                "close_rate": mean_or_none(close_percent(talked)),
                "mean_user_turns": mean_or_none(user_turns(talked)),
            }
        )
    all_hits = [r["hits"] or [0] * 5 for r in rows]
    judged = judged_rows(rows)
    lo, hi = cluster_bootstrap_ci(all_hits, [r["user_ip"] for r in rows], n_boot, bootstrap_seed)
    errors = Counter((r["error"] or "").split(":")[0] for r in rows if r["hits"] is None)
    return {
        "n_cases": len(rows),
        "fi": mean_sem([s["fi"] for s in per_seed]),
        "ci95": [lo, hi],
        "fi_judged_only": mean_sem([s["fi_judged_only"] for s in per_seed]),
        "dimensions": {d: mean_sem([s["dimensions"][d] for s in per_seed]) for d in FIDELITY_DIMENSIONS},
        "close_rate": pooled(close_percent(judged)),
        "mean_user_turns": pooled(user_turns(judged)),
        "error_rate": 100.0 * sum(errors.values()) / max(len(rows), 1),
        "errors_by_kind": dict(errors),
        "per_seed": per_seed,
    }
