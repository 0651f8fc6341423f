"""RealUserSim PT3's inputs: the test cases (``test_sets/<split>.jsonl``), the judge prompts, the DataModule
that pairs each case with a donor profile, and the paper's published rows."""

from __future__ import annotations

import random
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
    read_published,
    rows_of,
)


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
    for path, where, row in rows_of(paths):
        test_id = field_of(row, "test_id", where, (int, str))
        profile = field_of(row, "user_profile", where, dict)
        linguistic = field_of(profile, "linguistic_profile", f"{where}: user_profile", str)
        original = messages_of(field_of(row, "original_messages", where, (list, tuple)), where, "original_messages")
        if not any(m["role"] == "user" and m["content"].strip() for m in original):
            raise DataFormatError(f"{where}: field 'original_messages' has no non-empty user turn")
        case_id = realusersim_case_id(path.stem, test_id)
        claim(seen, case_id, where, "case")
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
    return at_least_one(cases, "RealUserSim cases", paths)


@dataclass(frozen=True)
class JudgePrompts:
    """The two RealUserSim judge prompts of ``judge_prompt.txt``."""

    system: str
    formatting: str


def _after_underline(lines: list[str], head: int) -> int:
    """The first line of a section: after its header and the header's ``=====`` underline, if any."""
    nxt = head + 1
    return nxt + 1 if nxt < len(lines) and lines[nxt].strip() and set(lines[nxt].strip()) <= set("=-") else nxt


def load_judge_prompts(path: str | Path) -> JudgePrompts:
    """Split ``judge_prompt.txt`` at its ``SYSTEM PROMPT`` and ``FORMATTING PROMPT …`` header lines; a line of
    ``=`` (or ``-``) under a header is the header's underline, not prompt text (the reference drops it, S87)."""
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
    s, f = (_after_underline(lines, heads[name]) for name in ("system", "formatting"))
    system = "\n".join(lines[s : heads["formatting"]] if s < f else lines[s:]).strip()
    formatting = "\n".join(lines[f : heads["system"]] if f < s else lines[f:]).strip()
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


_PUBLISHED = read_published(Path(__file__).with_name("published.json"))
# The paper's correct-profile rows (FI and the five dimensions, %) and the dataset card's gpt-4o reference.
REALUSERSIM = _PUBLISHED["rows"]
REALUSERSIM_CARD = _PUBLISHED["dataset_card"]
