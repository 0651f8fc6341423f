"""RealUserSim PT3's inputs: the test cases (``test_sets/<split>.jsonl``), the judge prompts, the DataModule
that pairs each case with a donor profile, and the paper's published rows."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesis_pl.eval.simulator.base import ItemDataModule
from mimesis_pl.eval.simulator.rows import DataFormatError, expand, field_of, iter_rows, messages_of


def realusersim_case_id(split: str, test_id: object) -> str:
    """``<split>-<test_id>`` (the reference's case id) with ``%`` and ``-`` of the split percent-encoded, so the
    first ``-`` always ends the split (real split names have none, so their ids are the reference's: E11)."""
    return f"{split.replace('%', '%25').replace('-', '%2D')}-{test_id}"


@dataclass(frozen=True)
class RealUserSimCase:
    """One PT3 test case. ``case_id`` is ``<split>-<test_id>`` (the split is the file's stem)."""

    case_id: str
    split: str
    domain: str
    user_ip: str
    problem_desc: str
    solution_conditions: str
    linguistic_profile: str
    demographics: Mapping[str, str] = field(default_factory=dict)
    original_messages: tuple[dict[str, str], ...] = ()
    conversation_hash: str = ""


_NO_VALUE = {"", "null", "none", "unknown", "n/a"}


def _demographics(profile: Mapping[str, Any], where: str) -> dict[str, str]:
    raw = profile.get("demographics") or {}
    if not isinstance(raw, Mapping):
        raise DataFormatError(f"{where}: field 'user_profile.demographics' must be an object")
    out = {}
    for name, value in raw.items():
        value = value.get("value") if isinstance(value, Mapping) else value
        if value is not None and str(value).strip().lower() not in _NO_VALUE:
            out[str(name)] = str(value).strip()
    return out


def load_realusersim_cases(paths: Sequence[str]) -> list[RealUserSimCase]:
    """PT3 cases from ``test_sets/<split>.jsonl`` files, in file then line order.

    Required non-empty: ``test_id``, ``user_ip``, ``problem_desc``, ``solution_conditions``,
    ``user_profile.linguistic_profile``, and ``original_messages`` with at least one user turn (the judge
    compares against them). A case id seen twice is an error.
    """
    cases: list[RealUserSimCase] = []
    seen: dict[str, str] = {}
    for path in expand(paths):
        for where, row in iter_rows(path):
            test_id = field_of(row, "test_id", where, (int, str))
            profile = field_of(row, "user_profile", where, dict)
            linguistic = field_of(profile, "linguistic_profile", f"{where}: user_profile", str)
            original = messages_of(field_of(row, "original_messages", where, (list, tuple)), where, "original_messages")
            if not any(m["role"] == "user" and m["content"].strip() for m in original):
                raise DataFormatError(f"{where}: field 'original_messages' has no non-empty user turn")
            case_id = realusersim_case_id(path.stem, test_id)
            if case_id in seen:
                raise DataFormatError(f"{where}: case {case_id!r} already defined at {seen[case_id]}")
            seen[case_id] = where
            cases.append(
                RealUserSimCase(
                    case_id=case_id,
                    split=path.stem,
                    domain=str(row.get("domain") or path.stem),
                    user_ip=str(field_of(row, "user_ip", where)),
                    problem_desc=field_of(row, "problem_desc", where),
                    solution_conditions=field_of(row, "solution_conditions", where),
                    linguistic_profile=linguistic,
                    demographics=_demographics(profile, where),
                    original_messages=original,
                    conversation_hash=str(row.get("conversation_hash") or ""),
                )
            )
    if not cases:
        raise DataFormatError(f"no RealUserSim cases in {list(paths)}")
    return cases


@dataclass(frozen=True)
class JudgePrompts:
    """The two RealUserSim judge prompts of ``judge_prompt.txt``."""

    system: str
    formatting: str


def load_judge_prompts(path: str | Path) -> JudgePrompts:
    """Split ``judge_prompt.txt`` at its ``SYSTEM PROMPT`` and ``FORMATTING PROMPT …`` header lines."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    heads = {}
    for i, line in enumerate(lines):
        label = line.strip().strip("#=-: ").upper()
        if label.startswith("SYSTEM PROMPT"):
            heads["system"] = i
        elif label.startswith("FORMATTING PROMPT"):
            heads["formatting"] = i
    for name in ("system", "formatting"):
        if name not in heads:
            raise DataFormatError(f"{path}: no '{name.upper()} PROMPT' section header line")
    s, f = heads["system"], heads["formatting"]
    system = "\n".join(lines[s + 1 : f] if s < f else lines[s + 1 :]).strip()
    formatting = "\n".join(lines[f + 1 : s] if f < s else lines[f + 1 :]).strip()
    for name, text in (("SYSTEM PROMPT", system), ("FORMATTING PROMPT", formatting)):
        if not text:
            raise DataFormatError(f"{path}: the {name} section is empty")
    return JudgePrompts(system=system, formatting=formatting)


@dataclass(frozen=True)
class RealUserSimItem:
    """A case with its donor for the shuffled-profile condition."""

    case: RealUserSimCase
    donor: RealUserSimCase


def sattolo_derangement(n: int, seed: int) -> list[int]:
    """``donor[i]`` for ``i < n``: Sattolo's algorithm (one n-cycle), so no index maps to itself (n ≥ 2)."""
    order = list(range(n))
    rng = random.Random(seed)
    for i in range(n - 1, 0, -1):
        j = rng.randrange(i)
        order[i], order[j] = order[j], order[i]
    return order


class RealUserSimDataModule(ItemDataModule):
    """RealUserSim PT3 cases (``test_sets/<split>.jsonl``), each paired with a donor profile.

    Args:
        files: split files, folders or globs.
        derangement_seed: seed of the Sattolo derangement that picks each case's donor (over the kept
            cases, after ``limit``); the mapping is saved with the results.
        limit: first N cases; ``batch_size``: cases per ``test_step``.
    """

    def __init__(
        self, files: list[str], derangement_seed: int = 0, limit: int | None = None, batch_size: int = 32
    ) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)
        self.derangement_seed = derangement_seed

    def load(self) -> list[Any]:
        return load_realusersim_cases(self.files)

    def setup(self, stage: str | None = None) -> None:
        if self.items:
            return
        cases = self.load()[: self.limit]
        if len(cases) < 2:
            raise ValueError(
                f"the shuffled-profile condition needs at least 2 cases, got {len(cases)} from {self.files}"
            )
        donors = sattolo_derangement(len(cases), self.derangement_seed)
        self.items = [RealUserSimItem(case, cases[d]) for case, d in zip(cases, donors)]


# RealUserSim PT3, correct-profile condition: FI, persona, style, technical, interaction, pacing (%).
REALUSERSIM = {
    "MIMESIS-9B": (94.0, 99.4, 89.5, 98.8, 91.3, 91.2),
    "MIMESIS-4B": (89.7, 98.7, 83.5, 96.5, 85.0, 84.9),
    "Claude-Opus-5": (80.6, 96.0, 72.5, 92.7, 69.5, 72.5),
    "GPT-5.5": (76.5, 99.3, 73.3, 95.1, 65.0, 49.6),
    "Ditto-8B": (71.3, 92.3, 69.8, 93.0, 57.4, 44.2),
    "Gemini-3.8-Flash": (67.2, 95.4, 57.6, 90.7, 52.2, 40.3),
    "Osim-8B": (57.7, 82.3, 46.0, 85.2, 40.5, 34.5),
    "Osim-4B": (54.1, 75.9, 42.8, 82.7, 37.0, 32.0),
    "Qwen3-8B": (44.4, 71.8, 37.6, 70.5, 24.3, 17.7),
    "Qwen3.5-9B": (39.4, 68.4, 29.8, 59.8, 19.8, 19.2),
    "Qwen3.5-4B": (37.1, 60.1, 26.4, 59.8, 20.0, 19.2),
    "HumanLM-8B": (28.4, 50.2, 17.0, 54.3, 11.5, 9.0),
    "Sotopia-7B": (20.7, 33.4, 7.1, 54.3, 4.7, 3.9),
}
# The dataset card's own reference (gpt-4o as simulator, assistant and judge): profile and task-only FI.
REALUSERSIM_CARD = {"correct_profile": 45.3, "task_only": 24.2}
