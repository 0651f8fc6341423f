"""Rebuild the gym data in this folder from a copy of the UserRL data (deterministic).

    python assets/gyms/build_gym_assets.py /path/to/userrl   # the folder holding data/ and gyms/

- functions.json: UserRL's gyms/FunctionGym/functiongym/data/functions.json, copied byte for byte.
- intention_details.json: the records of gyms/IntentionGym/intentiongym/data/all_intentions_{train,test}.json
  whose id appears in data/intention_multiturn/{train,test}.parquet, keeping only the fields the gym
  reads (id, task, missing_details[].description/importance/options/inquiry), in file order; the inquiry
  (UserRL's example question) is shown to a served coverage judge, as UserRL's judge sees it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def main(userrl: Path) -> None:
    shutil.copyfile(userrl / "gyms/FunctionGym/functiongym/data/functions.json", HERE / "functions.json")
    ids: set[str] = set()
    for split in ("train", "test"):
        for row in pq.read_table(
            userrl / f"data/intention_multiturn/{split}.parquet", columns=["reward_model"]
        ).to_pylist():
            ids.add(row["reward_model"]["id"])
    records = []
    for name in ("all_intentions_train.json", "all_intentions_test.json"):
        for record in json.loads((userrl / "gyms/IntentionGym/intentiongym/data" / name).read_text()):
            if record["id"] in ids:
                details = [
                    {"description": d["description"], "importance": d["importance"], "options": d.get("options") or []}
                    | ({"inquiry": d["inquiry"]} if d.get("inquiry") else {})
                    for d in record["missing_details"]
                ]
                records.append({"id": record["id"], "task": record["task"], "missing_details": details})
    missing = ids - {r["id"] for r in records}
    if missing:
        raise SystemExit(
            f"{len(missing)} intention ids of the parquet files are not in the JSON files, e.g. {sorted(missing)[:3]}"
        )
    (HERE / "intention_details.json").write_text(json.dumps(records, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote functions.json and intention_details.json ({len(records)} records)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))
