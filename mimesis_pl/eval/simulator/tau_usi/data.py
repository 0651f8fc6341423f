"""tau-USI's inputs: tau-bench task sets (and their DataModule), human annotation batches, the difficulty map,
survey answers, and the paper's published rows. Errors name the file, the entry and the field."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesis_pl.eval.simulator.base import ItemDataModule
from mimesis_pl.eval.simulator.rows import (
    DataFormatError,
    at_least_one,
    claim,
    field_of,
    messages_of,
    read_json,
    read_published,
    rows_of,
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
    for _, where, row in rows_of(paths):
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
        claim(seen, task.instance_id, where, "task")
        tasks.append(task)
    return at_least_one(tasks, "tau-bench tasks", paths)


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
        answers = survey_answers(entry.get("survey"), where)
        batches.setdefault(batch, {})[task] = HumanEntry(task, conversation, float(reward), answers)
    if not batches:
        raise DataFormatError(f"{path}: no kept human annotation")
    return dict(sorted(batches.items()))


def load_difficulty(path: str | Path) -> dict[str, float]:
    """The frozen difficulty map: ``{source, n_baselines, n_tasks, difficulty: {instance_id: pooled success in
    [0, 1]}}`` or the flat ``{instance_id: success}`` map (both as the reference writes them)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise DataFormatError(f"{path}: expected an object (a 'difficulty' map, or a flat task -> success map)")
    table = field_of(data, "difficulty", str(path), dict) if "difficulty" in data else data
    out = {}
    for task, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise DataFormatError(f"{path}: difficulty of {task!r} must be a number in [0, 1], got {value!r}")
        out[task] = float(value)
    return out


# Survey fields: the exact option strings (docs/decisions.md S70) -> ordinal value, normalised to [0, 1]
# over the field's (min, max) value. Only an exact match counts; anything else is "no answer".
SURVEY_SCALES: Mapping[str, Mapping[str, int]] = {
    "task_success": {
        "No - Task failed": 1,
        "No - Due to a policy issue, which the agent clearly explained": 2,
        "Partially - Some progress": 3,
        "Yes - Task completed": 4,
        "Fully - Exceeded expectations": 5,
    },
    "efficiency": {
        "Very inefficient - Too many steps": 1,
        "Somewhat inefficient": 2,
        "About right": 3,
        "Very efficient": 4,
    },
    "question_amount_preference": {"Too many": 1, "About right": 2, "Too few": 1},
    "answer_effort_time": {"High": 1, "Medium": 2, "Low": 3},
    "human_like": {"No": 1, "Partially": 2, "Yes": 3},
    "interaction_flow": {"Not smooth": 1, "OK": 2, "Smooth": 3, "Excellent": 4},
    "overall_score": {"1 (Very poor)": 1, "2 (Poor)": 2, "3 (Acceptable)": 3, "4 (Good)": 4, "5 (Excellent)": 5},
    "reuse": {"Absolutely no": 1, "No": 2, "Maybe": 3, "Yes": 4, "Absolutely yes": 5},
}


def survey_value(field_name: str, answer: Any) -> float | None:
    """An answer normalised to [0, 1] on its field's scale; None for "no answer" or a string that is not
    exactly one of the field's options."""
    scale = SURVEY_SCALES.get(field_name)
    if scale is None or not isinstance(answer, str) or answer not in scale:
        return None
    low, high = min(scale.values()), max(scale.values())
    return (scale[answer] - low) / (high - low)


def survey_answers(survey: Any, where: str) -> dict[str, str]:
    """``{field: answer}`` of a human entry's ``survey`` (``{field: {question, answer}}``); a field whose value
    is not a mapping is an error (as the reference), a missing or non-string answer is "no answer"."""
    if survey is None:
        return {}
    if not isinstance(survey, Mapping):
        raise DataFormatError(f"{where}: field 'survey' must be an object of field -> {{question, answer}}")
    out = {}
    for name, value in survey.items():
        if not isinstance(value, Mapping):
            raise DataFormatError(
                f"{where}: field 'survey.{name}' must be an object {{question, answer}}, got {type(value).__name__}"
            )
        if isinstance(value.get("answer"), str):
            out[name] = value["answer"]
    return out


class TauTaskDataModule(ItemDataModule):
    """tau-bench tasks for tau-USI rollouts (JSON list or JSONL).

    Args:
        files: task files; ``limit``: first N tasks; ``batch_size``: tasks per ``test_step``.
    """

    def __init__(self, files: list[str], limit: int | None = None, batch_size: int = 32) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)

    def load(self) -> list[Any]:
        return load_tau_tasks(self.files)


_PUBLISHED = read_published(Path(__file__).with_name("published.json"))
# The paper's rows (D1-D4, ECE, USI5) and the human inter-annotator USI5.
TAU_USI = _PUBLISHED["rows"]
TAU_USI_HUMAN = _PUBLISHED["human"]
