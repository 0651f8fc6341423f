"""tau-USI input formats: tau-bench task sets, human annotation batches, the
difficulty map and survey answers. Errors name the file, the entry and the field."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesis_pl.eval.simulator.loaders import (
    DataFormatError,
    expand,
    field_of,
    iter_rows,
    messages_of,
    read_json,
)


@dataclass(frozen=True)
class TauTask:
    """One tau-bench task; ``instance_id`` = ``<env_name>_<task_index>`` (e.g. ``retail_5``)."""

    env_name: str
    task_index: int
    instruction: str
    user_id: str = ""
    actions: tuple[Mapping[str, Any], ...] = ()
    outputs: tuple[str, ...] = ()

    @property
    def instance_id(self) -> str:
        return f"{self.env_name}_{self.task_index}"


def load_tau_tasks(paths: Sequence[str]) -> list[TauTask]:
    """Tasks from JSON lists / JSONL rows ``{env_name, task_index, instruction, user_id?, actions?, outputs?}``
    (``actions``: ``[{name, kwargs}]``, the ground-truth tool calls; ``outputs``: strings the agent must say)."""
    tasks: list[TauTask] = []
    seen: dict[str, str] = {}
    for path in expand(paths):
        for where, row in iter_rows(path):
            env = field_of(row, "env_name", where) if "env_name" in row else field_of(row, "domain", where)
            actions = row.get("actions") or []
            if not isinstance(actions, list) or not all(
                isinstance(a, Mapping) and isinstance(a.get("name"), str) and isinstance(a.get("kwargs", {}), Mapping)
                for a in actions
            ):
                raise DataFormatError(f"{where}: field 'actions' must be a list of {{name: str, kwargs: object}}")
            outputs = row.get("outputs") or []
            if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
                raise DataFormatError(f"{where}: field 'outputs' must be a list of strings")
            task = TauTask(
                env_name=env,
                task_index=field_of(row, "task_index", where, int),
                instruction=field_of(row, "instruction", where),
                user_id=str(row.get("user_id") or ""),
                actions=tuple(dict(a) for a in actions),
                outputs=tuple(outputs),
            )
            if task.instance_id in seen:
                raise DataFormatError(f"{where}: task {task.instance_id!r} already defined at {seen[task.instance_id]}")
            seen[task.instance_id] = where
            tasks.append(task)
    if not tasks:
        raise DataFormatError(f"no tau-bench tasks in {list(paths)}")
    return tasks


@dataclass(frozen=True)
class HumanEntry:
    """One human annotator's conversation on one task."""

    instance_id: str
    conversation: tuple[dict[str, str], ...]
    reward: float
    survey: Mapping[str, str] = field(default_factory=dict)


_ANN = re.compile(r"^(?P<task>.+?)(?:_ann(?P<n>\d+))?$")


def load_human_batches(path: str | Path) -> dict[int, dict[str, HumanEntry]]:
    """``tau_bench_tasks_unified.json`` → ``{batch: {instance_id: entry}}``: ``retail_5`` is batch 1,
    ``retail_5_ann2`` batch 2, … Entries with ``keep: false`` are left out."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataFormatError(f"{path}: expected an object keyed by task id, got {type(data).__name__}")
    batches: dict[int, dict[str, HumanEntry]] = {}
    for key, entry in data.items():
        where = f"{path}: entry {key!r}"
        if not isinstance(entry, Mapping):
            raise DataFormatError(f"{where} must be an object")
        if entry.get("keep", True) is False:
            continue
        match = _ANN.match(key)
        task, batch = match.group("task"), int(match.group("n") or 1)
        conversation = messages_of(field_of(entry, "conversation", where, list), where, "conversation")
        reward = field_of(entry, "reward", where, (int, float))
        survey = entry.get("survey") or {}
        if not isinstance(survey, Mapping):
            raise DataFormatError(f"{where}: field 'survey' must be an object")
        answers = {name: str(v.get("answer") if isinstance(v, Mapping) else v) for name, v in survey.items()}
        batches.setdefault(batch, {})[task] = HumanEntry(task, conversation, float(reward), answers)
    if not batches:
        raise DataFormatError(f"{path}: no kept human annotation")
    return dict(sorted(batches.items()))


def load_difficulty(path: str | Path) -> dict[str, float]:
    """The frozen difficulty map ``{"difficulty": {instance_id: pooled success in [0, 1]}}``."""
    path = Path(path)
    data = read_json(path)
    table = field_of(data, "difficulty", str(path), dict) if isinstance(data, Mapping) else None
    if table is None:
        raise DataFormatError(f"{path}: expected an object with a 'difficulty' map")
    out = {}
    for task, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise DataFormatError(f"{path}: difficulty of {task!r} must be a number in [0, 1], got {value!r}")
        out[task] = float(value)
    return out


# Survey fields: answer -> ordinal value, normalised to [0, 1] over the field's (min, max) value.
SURVEY_SCALES: Mapping[str, Mapping[str, int]] = {
    "task_success": {"no - not at all": 1, "mostly not": 2, "partially": 3, "mostly": 4, "yes - task completed": 5},
    "efficiency": {"very inefficient": 1, "somewhat inefficient": 2, "somewhat efficient": 3, "very efficient": 4},
    "question_amount_preference": {"too many": 1, "about right": 2, "too few": 1},
    "answer_effort_time": {"high": 1, "medium": 2, "low": 3},
    "human_like": {"no": 1, "partially": 2, "yes": 3},
    "interaction_flow": {"very unnatural": 1, "somewhat unnatural": 2, "somewhat natural": 3, "very natural": 4},
    "overall_score": {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5},
    "reuse": {"definitely not": 1, "probably not": 2, "maybe": 3, "probably yes": 4, "definitely yes": 5},
}


def survey_value(field_name: str, answer: Any) -> float | None:
    """An answer normalised to [0, 1] on its field's scale; None for "no answer" or an unknown option."""
    scale = SURVEY_SCALES.get(field_name)
    if scale is None or answer is None:
        return None
    value = scale.get(str(answer).strip().lower())
    if value is None:
        return None
    low, high = min(scale.values()), max(scale.values())
    return (value - low) / (high - low)


def load_survey_answers(path: str | Path) -> dict[str, dict[str, str]]:
    """Human survey answers comparable with the simulator's: ``{instance_id[_annN]: {field: answer}}``;
    unknown fields are errors (the scales are fixed, :data:`SURVEY_SCALES`)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise DataFormatError(f"{path}: expected an object keyed by task id")
    out = {}
    for key, answers in data.items():
        if not isinstance(answers, Mapping):
            raise DataFormatError(f"{path}: entry {key!r} must be an object of field -> answer")
        unknown = sorted(set(answers) - set(SURVEY_SCALES))
        if unknown:
            raise DataFormatError(f"{path}: entry {key!r} has unknown survey field(s) {unknown}")
        out[key] = {name: str(v) for name, v in answers.items()}
    return out
