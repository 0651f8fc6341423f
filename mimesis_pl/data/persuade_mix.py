"""More PersuadeGym training tasks from the same training arguments, for a small agent's SFT.

PersuadeGym's scripted user names, each turn, three words of the point it still holds; the agent has
to repeat them. 378 training tasks give a few thousand such copies, on ~1,200 distinct words, and a
small model trained on them learns those words rather than the copy itself. A *recombined* task
keeps a training claim (and its prompt) but argues for it with sentences drawn at random from the
other training arguments, so the points, their words and their order are new while every word still
comes from the training split — the held-out test tasks stay unseen.

    mimesis-pl data mix-persuade --src assets/data/persuade/train/PersuadeGym.parquet \\
        --out /tmp/persuade_mix.parquet --n 1500 --seed 0
"""

from __future__ import annotations

import argparse
import copy
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mimesis_pl.envs.text import sentences

TOOL = "interact_with_env"


def _argument_of(row: dict[str, Any], where: str) -> str:
    try:
        argument = row["extra_info"]["tools_kwargs"][TOOL]["create_kwargs"]["argument"]
    except (KeyError, TypeError):
        argument = (row.get("reward_model") or {}).get("argument")
    if not isinstance(argument, str) or not argument.strip():
        raise ValueError(f"{where}: no 'argument' (reward_model.argument or extra_info…create_kwargs.argument)")
    return argument


def recombined_tasks(
    rows: Sequence[dict[str, Any]], *, n: int, seed: int = 0, min_sentences: int = 4, max_sentences: int = 8
) -> list[dict[str, Any]]:
    """``n`` new PersuadeGym rows: a training row's claim argued with sentences of *other* rows.

    Each new row is a deep copy of a randomly chosen ``rows[i]`` whose argument (in ``reward_model`` and in
    the tool's ``create_kwargs``, wherever the source row has it) is replaced by ``k`` sentences
    (``min_sentences <= k <= max_sentences``, at most all there are) drawn without replacement from the
    arguments of rows other than ``i``; ``extra_info.index`` becomes ``len(rows) + j`` so that ids stay
    unique next to the originals.
    """
    if len(rows) < 2:
        raise ValueError(f"recombining needs at least 2 rows, got {len(rows)}")
    if not 1 <= min_sentences <= max_sentences:
        raise ValueError(f"need 1 <= min_sentences <= max_sentences, got {min_sentences}, {max_sentences}")
    pools = [sentences(_argument_of(row, f"row {i}")) for i, row in enumerate(rows)]
    flat = [s for pool in pools for s in pool]
    starts = [0]
    for pool in pools:
        starts.append(starts[-1] + len(pool))
    rng = random.Random(seed)
    out = []
    for j in range(n):
        i = rng.randrange(len(rows))
        others = flat[: starts[i]] + flat[starts[i + 1] :]  # every row's sentences but row i's, in order
        k = min(rng.randint(min_sentences, max_sentences), len(others))
        argument = " ".join(rng.sample(others, k))
        row = copy.deepcopy(rows[i])
        if isinstance(row.get("reward_model"), dict) and "argument" in row["reward_model"]:
            row["reward_model"]["argument"] = argument
        kwargs = ((row.get("extra_info") or {}).get("tools_kwargs") or {}).get(TOOL, {}).get("create_kwargs")
        if isinstance(kwargs, dict) and "argument" in kwargs:
            kwargs["argument"] = argument
        row.setdefault("extra_info", {})["index"] = len(rows) + j
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl data mix-persuade", description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True, help="PersuadeGym training parquet (UserRL format)")
    parser.add_argument("--out", required=True, help="parquet file to write: the original rows, then the new ones")
    parser.add_argument("--n", type=int, default=1500, help="recombined tasks to add")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    import pyarrow as pa
    import pyarrow.parquet as pq

    src, out = Path(args.src), Path(args.out)
    if not src.is_file():
        parser.error(f"--src {src} is not a file")
    if out.exists() and not args.overwrite:
        parser.error(f"--out {out} exists; pass --overwrite to replace it, or choose another path")
    rows = pq.read_table(src).to_pylist()
    table = pa.Table.from_pylist(rows + recombined_tasks(rows, n=args.n, seed=args.seed))
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    print(f"wrote {out}: {len(rows)} original + {args.n} recombined PersuadeGym tasks")
    return 0
