"""TravelGym scenarios in UserRL's file format, and the task id / variant naming of its parquet rows.

A scenario file (UserRL's ``travelgym_data_<variant>.json``) maps a scenario id to a record::

    {"scenario": str, "dimensions": ["flight", "hotel", ...], "wanted_num": int,
     "initial_description": str,
     <dimension>: {
         "preferences": [[aspect, subcategory, preference_text, implicit_elicitation, ...], ...],
         "options": {"correct": [{"id": "F3", ...}, ...], "wrong": [...], "noise": [...]},
         "arguments": {...ground-truth search arguments...},
         "correct_ids": ["F3", ...], "best_id": "F3"},
     ...}

Each dimension's data sits at the top level of the record, as UserRL's ``task_data.py`` and its parquet
builder read it (``scenario_data[dimension]``). Files written by earlier versions of this package, which
nested the dimensions under ``"preferences"``, still load (A80). Option ``type``/``reason``
fields are dropped when loaded, as UserRL does, so they never reach the agent. Parquet rows name a
scenario by its id, ``"flight:4-213|rental_car:4-143|restaurant:4-230"``: per dimension, the number of
preferences and a serial number; the variant set (``travel444``) is the sorted preference counts.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mimesis_pl.envs.base import TaskDataError

# Option-id initial of each travel aspect (UserRL's letters).
ASPECT_INITIALS: dict[str, str] = {"flight": "F", "hotel": "H", "apartment": "A", "restaurant": "R", "rental_car": "C"}
INITIAL_ASPECTS: dict[str, str] = {v: k for k, v in ASPECT_INITIALS.items()}
# The eight configurations, as UserRL names its data sets.
TRAVEL_VARIANTS: tuple[str, ...] = (
    "travel22",
    "travel33",
    "travel44",
    "travel233",
    "travel333",
    "travel334",
    "travel444",
    "travel2222",
)
_ID_PART = re.compile(r"^(flight|hotel|apartment|restaurant|rental_car):(\d+)-(\d+)$")
_DROPPED_OPTION_FIELDS = ("type", "reason")


@dataclass(frozen=True)
class TravelPreference:
    """One hidden preference: ``P<n>`` in scenario order, its dimension and UserRL's four fields."""

    pid: str
    dimension: str
    aspect: str
    subcategory: str
    preference: str
    implicit_elicitation: str


@dataclass(frozen=True)
class TravelScenario:
    """One loaded scenario. ``options`` per dimension are in the order shown to the agent."""

    scenario_id: str
    scenario: str
    dimensions: tuple[str, ...]
    initial_description: str
    preferences: tuple[TravelPreference, ...]
    options: Mapping[str, tuple[Mapping[str, Any], ...]]
    arguments: Mapping[str, Mapping[str, Any]]
    correct_ids: Mapping[str, frozenset[str]]
    best_ids: Mapping[str, str]

    def aspect_of(self, option_id: str) -> str | None:
        """The scenario dimension an option id belongs to (by its initial), or None."""
        aspect = INITIAL_ASPECTS.get(option_id[:1])
        return aspect if aspect in self.dimensions else None


def parse_task_id(task_id: str) -> dict[str, int]:
    """``"flight:4-213|hotel:2-36"`` → ``{"flight": 4, "hotel": 2}`` (dimension → number of preferences)."""
    out: dict[str, int] = {}
    for part in str(task_id).split("|"):
        match = _ID_PART.match(part.strip())
        if match is None:
            raise TaskDataError(f"TravelGym task id {task_id!r}: part {part!r} is not '<aspect>:<n>-<serial>'")
        if match.group(1) in out:
            raise TaskDataError(f"TravelGym task id {task_id!r}: aspect {match.group(1)!r} appears twice")
        out[match.group(1)] = int(match.group(2))
    return out


def variant_of(task_id: str) -> str:
    """The UserRL set a task id belongs to: ``"flight:3-114|hotel:2-36|rental_car:3-65"`` → ``"travel233"``."""
    return "travel" + "".join(str(n) for n in sorted(parse_task_id(task_id).values()))


def parse_best_ids(ground_truth: Any, *, where: str) -> dict[str, str]:
    """The row's ``ground_truth`` (``"['F8', 'C16']"``, or a list) as aspect → best option id."""
    if isinstance(ground_truth, str):
        ids = re.findall(r"[A-Z]\d+", ground_truth)
    elif isinstance(ground_truth, Sequence):
        ids = [str(x).strip() for x in ground_truth]
    else:
        raise TaskDataError(f"{where}: field 'ground_truth' must list the best option ids, got {ground_truth!r}")
    out: dict[str, str] = {}
    for oid in ids:
        aspect = INITIAL_ASPECTS.get(oid[:1])
        if aspect is None or not oid[1:].isdigit():
            raise TaskDataError(f"{where}: field 'ground_truth' has an option id {oid!r} of no known aspect")
        out[aspect] = oid
    return out


def dimension_records(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """Each dimension's data of a scenario record: UserRL's top-level ``record[dim]``, else the old nesting.

    The package once wrote the dimensions under ``record["preferences"]``; such a file still loads. A record
    with both layouts for one dimension takes UserRL's.
    """
    nested = record.get("preferences")
    old = dict(nested) if isinstance(nested, Mapping) else {}
    return {**old, **{d: record[d] for d in record.get("dimensions") or () if isinstance(record.get(d), Mapping)}}


def scenario_from_record(scenario_id: str, record: Mapping[str, Any], *, where: str, seed: int = 42) -> TravelScenario:
    """Validate one UserRL scenario record; options are shuffled with a per-scenario seed (A41)."""
    if not isinstance(record, Mapping):
        raise TaskDataError(f"{where}: scenario {scenario_id!r} must be a JSON object")
    dimensions = record.get("dimensions")
    if not isinstance(dimensions, list) or not dimensions or any(d not in ASPECT_INITIALS for d in dimensions):
        known = sorted(ASPECT_INITIALS)
        raise TaskDataError(f"{where}: scenario {scenario_id!r}: 'dimensions' must list aspects of {known}")
    per_dim = dimension_records(record)
    rng = random.Random(f"{seed}:{scenario_id}")
    preferences: list[TravelPreference] = []
    options: dict[str, tuple[Mapping[str, Any], ...]] = {}
    arguments: dict[str, Mapping[str, Any]] = {}
    correct: dict[str, frozenset[str]] = {}
    best: dict[str, str] = {}
    for dim in dimensions:
        at = f"{where}: scenario {scenario_id!r}, dimension {dim!r}"
        data = per_dim.get(dim)
        if not isinstance(data, Mapping):
            raise TaskDataError(f"{at}: the record needs a '{dim}' object (UserRL's layout: one per dimension)")
        for j, fields in enumerate(data.get("preferences") or ()):
            if not isinstance(fields, list) or len(fields) < 4 or not all(isinstance(f, str) for f in fields[:4]):
                raise TaskDataError(f"{at}: preferences[{j}] must be [aspect, subcategory, preference, implicit, ...]")
            preferences.append(TravelPreference(f"P{len(preferences) + 1}", dim, *fields[:4]))
        raw = data.get("options")
        if not isinstance(raw, Mapping) or not raw.get("correct"):
            raise TaskDataError(f"{at}: field 'options' needs a non-empty 'correct' list")
        shown = [
            {k: v for k, v in o.items() if k not in _DROPPED_OPTION_FIELDS}
            for kind in ("correct", "wrong", "noise")
            for o in raw.get(kind) or ()
        ]
        if any(not isinstance(o.get("id"), str) for o in shown):
            raise TaskDataError(f"{at}: every option needs a string 'id'")
        rng.shuffle(shown)
        options[dim] = tuple(shown)
        correct[dim] = frozenset(str(i) for i in data.get("correct_ids") or ())
        best_id = data.get("best_id")
        if not isinstance(best_id, str) or best_id not in correct[dim]:
            raise TaskDataError(f"{at}: 'best_id' {best_id!r} must be one of 'correct_ids'")
        best[dim] = best_id
        args = data.get("arguments", {})
        arguments[dim] = args if isinstance(args, Mapping) else {}
    return TravelScenario(
        scenario_id=scenario_id,
        scenario=str(record.get("scenario", "")),
        dimensions=tuple(dimensions),
        initial_description=str(record.get("initial_description") or record.get("initial_desc") or ""),
        preferences=tuple(preferences),
        options=options,
        arguments=arguments,
        correct_ids=correct,
        best_ids=best,
    )


@lru_cache(maxsize=16)
def _read_records(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read TravelGym scenarios {path}: {err}") from None
    if not isinstance(data, dict):
        raise TaskDataError(f"{path}: a TravelGym scenario file must be a JSON object (scenario id → scenario)")
    return data


def scenario_records(paths: Sequence[str | Path]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Every scenario of the given files as id → (file, record); an id in two files is an error."""
    out: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for path in paths:
        for sid, record in _read_records(str(path)).items():
            if sid in out:
                raise TaskDataError(f"TravelGym scenario {sid!r} is in both {out[sid][0]} and {path}")
            out[sid] = (str(path), record)
    return out
