"""Writes the made-up SOUL validation sets of assets/data/eval/soul/ (spec (c) C3 rows, one ``<set>_val.jsonl``
per set whose simulator-RL task exists today); deterministic.

    python assets/data/eval/soul/make_samples.py

The rows are the simulator-RL sample rows of ``assets/data/simulator_rl/`` (train + val), two per set,
re-indexed 0, 1; the AlignX splits share the AlignX rows (only their ``data_source`` differs). One extra
Mistakes row (index 2) lacks its question on purpose: its task fails (``task_error``), so the tiny report
shows unscored rows being counted, never scored as 0.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "simulator_rl"
ALIGNX = ("alignx_demo", "alignx_pair", "alignx_ugc", "alignx_arbitrary", "alignx_history16")
ROWS_PER_SET = 2


def main() -> None:
    rows: dict[str, list[dict]] = {}
    for split in ("val", "train"):
        for line in (SRC / f"{split}.jsonl").read_text().splitlines():
            row = json.loads(line)
            if row["data_source"] != "usersim-behavior":
                rows.setdefault(row["data_source"], []).append(row)
    for source in ALIGNX[1:]:
        rows[source] = [{**r, "data_source": source} for r in rows["alignx_demo"]]
    broken = dict(rows["mistakes"][0], extra_info={k: v for k, v in rows["mistakes"][0]["extra_info"].items()
                                                   if k != "QuestionText"})
    for old in HERE.glob("*_val.jsonl"):
        old.unlink()
    for source, found in sorted(rows.items()):
        kept = [dict(r, extra_info={**r["extra_info"], "index": i}) for i, r in enumerate(found[:ROWS_PER_SET])]
        if source == "mistakes":
            kept.append(dict(broken, extra_info={**broken["extra_info"], "index": len(kept)}))
        (HERE / f"{source}_val.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))


if __name__ == "__main__":
    main()
