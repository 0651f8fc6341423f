"""Turn UserRL-format gym parquet files into our RL prompt sets, split by *task*, not by row.

The reference split rows, so a task appearing in several rows (or a travel scenario in several
variants) could land in both train and validation. Here every row is keyed by its task id
(``reward_model.id`` / ``title``); whole tasks go to one side, ``max(1, round(val_fraction · tasks))``
per gym to validation. Output: ``{out}/train/{gym}.parquet`` and ``{out}/val/{gym}.parquet`` (one
file per gym keeps each gym's row schema exactly as it was), listed in ``{out}/prepare-gyms.json``.
A rerun into the same ``--out`` first removes the files the previous run listed there, so no stale
gym file is left for a config's glob to pick up; a file there that this command did not write is
never touched: the run stops and names it.

``compact_prompts=True`` replaces each row's system message by a short one of the same task and tool
(the gym's ``GymSpec.compact_prompt``): UserRL's ~700-token instructions
dominate the cost of every sequence of a CPU-sized agent, which cannot read them anyway. Hidden fields are untouched.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..envs.registry import default_registry
from ..envs.tasks import GymTask
from .chat_sft import expand_files
from .mixture import open_parquet

MANIFEST = "prepare-gyms.json"


def compact_prompt_row(row: dict[str, Any], gym: str) -> dict[str, Any]:
    """``row`` with its system message replaced by the gym's compact one (``GymSpec.compact_prompt``, registered
    gyms included; a new dict: ``row`` is unchanged)."""
    prompts = default_registry().compact_prompts()
    if gym not in prompts:
        raise ValueError(f"no compact system prompt for gym {gym!r}; known: {sorted(prompts)}")
    prompt = [dict(m) for m in row["prompt"]]
    system = [m for m in prompt if m.get("role") == "system"]
    if system:
        system[0]["content"] = prompts[gym]
    else:
        prompt.insert(0, {"role": "system", "content": prompts[gym]})
    return {**row, "prompt": prompt}


def prepare_gym_prompts(
    src: list[str],
    out_dir: str | Path,
    val_fraction: float = 0.05,
    seed: int = 42,
    max_per_gym: int | None = None,
    gyms: list[str] | None = None,
    compact_prompts: bool = False,
) -> dict[str, Any]:
    """Split ``src`` parquet files by task into train/val prompt files; return counts per gym and split."""
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    registry = default_registry()
    wanted = {registry.canonical_name(g) for g in gyms} if gyms else None
    by_gym: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    skipped: Counter = Counter()
    for path in expand_files(src):
        for i, row in enumerate(open_parquet(path).read().to_pylist()):
            task = GymTask.from_row(row, source=f"{path}:row{i}")
            try:
                gym = registry.canonical_name(task.env_name)
            except ValueError:
                skipped[f"unsupported/{task.env_name}"] += 1
                continue
            if wanted is not None and gym not in wanted:
                skipped[f"not_selected/{gym}"] += 1
                continue
            by_gym[gym][task.key].append(compact_prompt_row(row, gym) if compact_prompts else row)
    out_dir = Path(out_dir)
    previous = _previous_outputs(out_dir)
    summary: dict[str, Any] = {"skipped": dict(skipped), "gyms": {}}
    outputs: dict[Path, list[dict]] = {}
    rng = random.Random(seed)
    for gym in sorted(by_gym):
        keys = sorted(by_gym[gym])
        rng.shuffle(keys)
        n_val = max(1, round(val_fraction * len(keys))) if val_fraction > 0 and len(keys) > 1 else 0
        splits = {"val": keys[:n_val], "train": keys[n_val:]}
        if max_per_gym is not None:
            splits["train"] = splits["train"][:max_per_gym]
            splits["val"] = splits["val"][: max(1, max_per_gym // 4)] if splits["val"] else []
        assert not set(splits["val"]) & set(splits["train"]), "a task landed on both sides"
        summary["gyms"][gym] = {}
        for split, split_keys in splits.items():
            rows = [row for key in split_keys for row in by_gym[gym][key]]
            summary["gyms"][gym][split] = {"tasks": len(split_keys), "rows": len(rows)}
            if rows:
                outputs[out_dir / split / f"{gym}.parquet"] = rows
    for stale in previous:
        stale.unlink(missing_ok=True)
    for path, rows in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path)
    written = sorted(str(p.relative_to(out_dir)) for p in outputs)
    (out_dir / MANIFEST).write_text(json.dumps({"files": written, **summary}, indent=1) + "\n", encoding="utf-8")
    return summary


def _previous_outputs(out_dir: Path) -> list[Path]:
    """Files a previous run listed in ``out_dir``; any other file in ``train/`` or ``val/`` is an error."""
    manifest = out_dir / MANIFEST
    listed: set[Path] = set()
    if manifest.is_file():
        try:
            listed = {out_dir / name for name in json.loads(manifest.read_text(encoding="utf-8"))["files"]}
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(
                f"{manifest}: not a prepare-gyms manifest ({err}); remove it or use another --out"
            ) from err
    present = {p for split in ("train", "val") if (out_dir / split).is_dir() for p in (out_dir / split).iterdir()}
    foreign = sorted(str(p) for p in present - listed)
    if foreign:
        raise FileExistsError(
            f"--out {out_dir}: {foreign} were not written by prepare-gyms (no {MANIFEST} lists them); "
            "they would mix with this run's files — use an empty --out or move them away"
        )
    return sorted(listed & present)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl data prepare-gyms", description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", nargs="+", required=True, help="UserRL-format parquet files (globs allowed)")
    parser.add_argument("--out", required=True, help="output folder (train/ and val/ are created)")
    parser.add_argument("--val-fraction", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max-per-gym", type=int, default=None, help="cap on training tasks per gym")
    parser.add_argument("--gyms", nargs="*", default=None, help="only these gyms (env names or data sources)")
    parser.add_argument(
        "--compact-prompts", action="store_true", help="replace the system prompt by a short one (CPU-sized agents)"
    )
    args = parser.parse_args(argv)
    summary = prepare_gym_prompts(
        args.src, args.out, args.val_fraction, args.seed, args.max_per_gym, args.gyms, args.compact_prompts
    )
    print(json.dumps(summary, indent=1))
    return 0
