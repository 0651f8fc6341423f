"""Rows for usersim-behavior from ABCD conversations (the reference never published its builder).

For every conversation whose scenario names a covered (flow, subflow), each behaviour whose
``applicable`` holds gets one row with kwargs drawn by a seeded RNG (one RNG per conversation and
behaviour, so adding a behaviour never changes another's draws), and the scenario also gets a control
row. Rows have the reference's shape (``scenario``, ``behavior_ids`` and ``kwargs`` as JSON strings;
``flow``, ``subflow``, ``turn_budget``, ``index``). Uncovered scenarios (FAQ lookups, ``status_active``)
are counted per subflow, never silently dropped.

    mimesis-pl data usersim-rows --abcd-dir DIR --conversations abcd_v1.1.json --split train --out rows.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .abcd import STANDIN_DIR, AbcdData, AbcdError
from .behaviors import BEHAVIORS, Scene
from .prompts import CONNECTION_NOTICE

DATA_SOURCE = "usersim-behavior"


@dataclass(frozen=True)
class BuildSettings:
    """How rows are drawn.

    Args:
        seed: base of every RNG (per conversation and behaviour).
        turn_budget: generated simulator turns per row (the reference's default 8); a behaviour needing
            more turns to unfold (``min_turn``) gets ``min_turn + 2``.
        behaviors: the behaviours to build (``None``: all 13).
        control_rows: add one control row (no behaviour) per covered scenario.
    """

    seed: int = 0
    turn_budget: int = 8
    behaviors: Sequence[str] | None = None
    control_rows: bool = True

    def __post_init__(self) -> None:
        if self.turn_budget < 1:
            raise ValueError(f"turn_budget must be >= 1, got {self.turn_budget}")
        unknown = sorted(set(self.behaviors or ()) - set(BEHAVIORS))
        if unknown:
            raise ValueError(f"unknown behaviour(s) {unknown}; known: {sorted(BEHAVIORS)}")


@dataclass
class BuildReport:
    """What the builder did: rows per behaviour (``control`` included) and skipped scenarios by reason."""

    rows: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        made = ", ".join(f"{k}={v}" for k, v in sorted(self.rows.items())) or "none"
        skipped = ", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items())) or "none"
        return f"rows: {sum(self.rows.values())} ({made}); skipped scenarios: {sum(self.skipped.values())} ({skipped})"


def _rng(seed: int, *parts: object) -> random.Random:
    digest = hashlib.sha256("\x1f".join(map(str, (seed, *parts))).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def make_row(index: int, scene: Scene, behavior: str | None, kwargs: Mapping[str, Any], turn_budget: int) -> dict:
    """One row in the reference's shape."""
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": CONNECTION_NOTICE}],
        "extra_info": {
            "index": index,
            "flow": scene.flow,
            "subflow": scene.subflow,
            "turn_budget": turn_budget,
            "scenario": json.dumps(dict(scene.scenario), sort_keys=True),
            "behavior_ids": json.dumps([behavior] if behavior else []),
            "kwargs": json.dumps([dict(kwargs)] if behavior else []),
        },
    }


def build_rows(
    data: AbcdData, conversations: Iterable[Mapping[str, Any]], settings: BuildSettings = BuildSettings()
) -> tuple[list[dict], BuildReport]:
    """Rows for ``conversations`` (ABCD entries with ``convo_id`` and ``scenario``) and a :class:`BuildReport`."""
    names = list(settings.behaviors) if settings.behaviors is not None else list(BEHAVIORS)
    rows: list[dict] = []
    report = BuildReport()
    for k, convo in enumerate(conversations):
        scenario = convo.get("scenario")
        if not isinstance(scenario, Mapping):
            raise AbcdError(f"conversation {k} (convo_id {convo.get('convo_id')!r}): 'scenario' must be an object")
        flow, subflow = str(scenario.get("flow", "")), str(scenario.get("subflow", ""))
        try:
            data.spec(flow, subflow)
        except AbcdError:
            report.skipped[f"uncovered:{subflow or '?'}"] += 1
            continue
        scene = Scene(data, flow, subflow, scenario)
        convo_id = convo.get("convo_id", k)
        for name in names:
            behavior = BEHAVIORS[name]
            if not behavior.applicable(scene):
                continue
            kwargs = behavior.derive_kwargs(scene, _rng(settings.seed, convo_id, name))
            budget = max(settings.turn_budget, behavior.min_turn + 2)
            rows.append(make_row(len(rows), scene, name, kwargs, budget))
            report.rows[name] += 1
        if settings.control_rows:
            rows.append(make_row(len(rows), scene, None, {}, settings.turn_budget))
            report.rows["control"] += 1
    return rows, report


def load_conversations(path: str | Path, split: str) -> list[dict[str, Any]]:
    """The ``split`` list of an ``abcd_v1.1.json`` file; a missing split or file is an error naming it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise AbcdError(f"{path}: no such file") from None
    except json.JSONDecodeError as err:
        raise AbcdError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get(split), list):
        splits = sorted(data) if isinstance(data, dict) else []
        raise AbcdError(f"{path}: no list of conversations under {split!r}; splits: {splits}")
    return data[split]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl data usersim-rows", description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", required=True, help="abcd_v1.1.json (conversations with scenarios)")
    parser.add_argument("--abcd-dir", default=str(STANDIN_DIR), help="folder with guidelines.json and kb.json")
    parser.add_argument("--split", default="train", help="train, dev or test")
    parser.add_argument("--out", required=True, help="JSONL file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turn-budget", type=int, default=8)
    parser.add_argument("--behaviors", nargs="*", default=None, help="behaviour ids (default: all 13)")
    parser.add_argument("--no-control", action="store_true", help="no control rows")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        parser.error(f"--out {out} exists; pass --overwrite to replace it, or choose another path")
    try:
        settings = BuildSettings(
            seed=args.seed, turn_budget=args.turn_budget, behaviors=args.behaviors, control_rows=not args.no_control
        )
        rows, report = build_rows(
            AbcdData.load(args.abcd_dir), load_conversations(args.conversations, args.split), settings
        )
    except (AbcdError, ValueError) as err:
        parser.error(str(err))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    print(f"wrote {out}: {report.summary()}")
    return 0
