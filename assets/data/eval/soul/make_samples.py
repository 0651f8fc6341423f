"""Writes the made-up SOUL validation sets of assets/data/eval/soul/ (spec (c) C3 rows, one ``<set>_val.jsonl``
per set whose simulator-RL task exists today); deterministic.

    python assets/data/eval/soul/make_samples.py

The rows are the simulator-RL sample rows of ``assets/data/simulator_rl/`` (train + val), exactly
``ROWS_PER_SET`` (two) per set, re-indexed 0, 1 — a set with fewer sample rows reuses them in order under
the next index — for all 27 SOUL sets; the AlignX splits share the AlignX rows (only their ``data_source``
differs). One extra Mistakes row (index 2) lacks its question on purpose: its task fails (``task_error``),
so the tiny report shows unscored rows being counted, never scored as 0. A SOUL set with no sample row
is an error (the README and the tiny config promise every set).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "simulator_rl"
ALIGNX = ("alignx_demo", "alignx_pair", "alignx_ugc", "alignx_arbitrary", "alignx_history16")
ROWS_PER_SET = 2
SOUL_SETS = (
    "userllm", "mirrorbench", "humanual-chat", "sim_arena_doc", "sotopia", "fantom", "hitom", "paratomi",
    "social_r1", "coser", "lifechoices", "twinvoice", "behavior_chain", "sim_arena_math", "mistakes",
    "humanual-email", "humanual-news", "humanual-politics", "humanual-book", "humanual-opinion", *ALIGNX,
    "socsci210", "humanllm",
)  # fmt: skip


def main() -> None:
    rows: dict[str, list[dict]] = {}
    for split in ("val", "train"):
        for line in (SRC / f"{split}.jsonl").read_text().splitlines():
            row = json.loads(line)
            if row["data_source"] != "usersim-behavior":
                rows.setdefault(row["data_source"], []).append(row)
    for source in ALIGNX[1:]:
        rows[source] = [{**r, "data_source": source} for r in rows["alignx_demo"]]
    broken = dict(
        rows["mistakes"][0],
        extra_info={k: v for k, v in rows["mistakes"][0]["extra_info"].items() if k != "QuestionText"},
    )
    absent = [s for s in SOUL_SETS if not rows.get(s)]
    if absent:
        raise SystemExit(f"no simulator-RL sample row for SOUL set(s) {absent} in {SRC}")
    for old in HERE.glob("*_val.jsonl"):
        old.unlink()
    for source in SOUL_SETS:
        found = rows[source]
        picked = [found[i % len(found)] for i in range(ROWS_PER_SET)]
        kept = [dict(r, extra_info={**r["extra_info"], "index": i}) for i, r in enumerate(picked)]
        if source == "mistakes":
            kept.append(dict(broken, extra_info={**broken["extra_info"], "index": len(kept)}))
        (HERE / f"{source}_val.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))


if __name__ == "__main__":
    main()
