"""Issue 33, item 3: SOUL's "Overall (the paper's)" is the reference's ``val-core/all/score``.

The reference's Overall, restated: every scored row logs ``all/score``, its reward, except Sotopia rows, which
log ``0.1 · mean`` of their seven raw judge dimensions (believability 0–10, relationship −5–5, knowledge 0–10,
secret −10–0, social rules −10–0, financial −5–5, goal 0–10); the Overall is the plain mean over all rows × 100.
"""

from __future__ import annotations

import pytest

from mimesis_pl.eval.simulator.soul.scoring import (
    SOTOPIA_DIMENSIONS,
    degenerate_seeds,
    headline_value,
    seed_summary,
)
from mimesis_pl.tasks.sotopia import DIMENSIONS, SotopiaVerdict, sotopia_score

RAW = [  # two Sotopia episodes' raw judge scores, in SOTOPIA_DIMENSIONS order
    (7, 1, 4, -3, 0, 0, 6),  # mean 15/7
    (3, -4, 2, -8, -6, -2, 2),  # mean -13/7: the reference's Overall can go below 0 on such rows
]


def ref_val_core_all_score(rows: list[tuple[str, float, tuple | None]]) -> float:
    """Independent port: rows are (data_source, reward, sotopia raw dims or None); 100 × mean of all/score."""
    values = [0.1 * sum(raw) / len(raw) if source == "sotopia" else reward for source, reward, raw in rows]
    return 100 * sum(values) / len(values)


def test_the_dimension_names_are_the_tasks():
    assert SOTOPIA_DIMENSIONS == tuple(DIMENSIONS)


def test_overall_is_the_reference_val_core_all_score():
    sotopia = [(sotopia_score(SotopiaVerdict(*raw)), dict(zip(SOTOPIA_DIMENSIONS, map(float, raw)))) for raw in RAW]
    scores = {"fantom": [1.0, 0.0, 1.0], "humanual-chat": [0.4], "sotopia": [r for r, _ in sotopia]}
    headline = {
        "fantom": [1.0, 0.0, 1.0],
        "humanual-chat": [0.4],
        "sotopia": [headline_value("sotopia", r, {f"sotopia/{k}": v for k, v in m.items()}) for r, m in sotopia],
    }
    summary = seed_summary(scores, headline)
    rows = [("fantom", 1.0, None), ("fantom", 0.0, None), ("fantom", 1.0, None), ("humanual-chat", 0.4, None)]
    rows += [("sotopia", r, raw) for (r, _), raw in zip(sotopia, RAW)]
    # by hand: (1 + 0 + 1 + 0.4 + 0.1·15/7 + 0.1·(−13/7)) / 6 × 100 = (2.4 + 0.2/7) / 6 × 100 = 40.476...
    assert summary["overall"] == pytest.approx(ref_val_core_all_score(rows)) == pytest.approx((2.4 + 0.2 / 7) / 6 * 100)
    # ours (the trained rewards, row-weighted) sits beside it under its own name and differs
    assert summary["overall_row_weighted"] == pytest.approx(100 * (2.4 + sum(r for r, _ in sotopia)) / 6)
    assert summary["overall_row_weighted"] != pytest.approx(summary["overall"])


def test_headline_value_of_other_sets_is_the_score_and_sotopia_needs_its_dimensions():
    assert headline_value("fantom", 0.75, {}) == 0.75
    with pytest.raises(ValueError, match="believability"):
        headline_value("sotopia", 0.5, {"sotopia/goal": 3.0})


def test_degenerate_seeds_read_the_papers_overall():
    def seed(overall: float, row_weighted: float) -> dict:
        datasets = {f"s{i}": 0.0 for i in range(8)}
        return {"datasets": datasets, "overall": overall, "overall_row_weighted": row_weighted}

    # by the paper's Overall seed 2 is 20 below the median (30): dropped, as the reference drops it
    per_seed = {0: seed(30.0, 60.0), 1: seed(31.0, 61.0), 2: seed(10.0, 55.0)}
    assert list(degenerate_seeds(per_seed)) == [2]
