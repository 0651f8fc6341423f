"""Write generated TravelGym scenarios (UserRL's file format) for the Travel rows of parquet files.

python -m mimesis_pl.envs.gyms.travel --src 'data/userrl/travel*_multiturn_onechoice/*.parquet' --out s.json
"""

from __future__ import annotations

import argparse
import glob
from collections.abc import Mapping, Sequence

from mimesis_pl.envs.gyms.travel.generator import write_scenarios
from mimesis_pl.envs.gyms.travel.scenarios import parse_best_ids
from mimesis_pl.envs.tasks import read_gym_tasks


def main(argv: Sequence[str] | None = None) -> int:
    """Write generated scenarios for every TravelGym row of ``--src`` (globs) to ``--out``."""
    parser = argparse.ArgumentParser(prog="python -m mimesis_pl.envs.gyms.travel", description=main.__doc__)
    parser.add_argument("--src", nargs="+", required=True, help="UserRL parquet files or globs")
    parser.add_argument("--out", required=True, help="the scenario file to write (JSON, UserRL's format)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    paths = sorted({p for pattern in args.src for p in (glob.glob(pattern) or [pattern])})
    tasks: dict[str, Mapping[str, str]] = {}
    for path in paths:
        for task in read_gym_tasks(path, env_names=["TravelGym"]):
            tasks[task.key] = parse_best_ids(task.hidden.get("ground_truth", ""), where=task.source)
    out = write_scenarios(sorted(tasks.items()), args.out, seed=args.seed)
    print(f"wrote {len(tasks)} TravelGym scenarios from {len(paths)} files to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
