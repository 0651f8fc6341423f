"""Loaders of the suites' real input formats (SOUL parquets, RealUserSim PT3 cases, turing-rl rows).

Every loader checks what the suites need and fails with an error naming the file, the row and the field.
The tau-USI formats are in :mod:`mimesis_pl.eval.simulator.tau_data`.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesis_pl.eval.trials.keys import join_id


class DataFormatError(ValueError):
    """An input file does not hold what its format requires; the message names file, row and field."""


def expand(paths: Sequence[str]) -> list[Path]:
    """Files of ``paths`` (files, folders of ``*.jsonl``/``*.parquet``, globs), sorted per entry."""
    out: list[Path] = []
    for spec in paths:
        p = Path(spec)
        if p.is_dir():
            found = sorted([*p.glob("*.jsonl"), *p.glob("*.parquet")])
        elif any(ch in spec for ch in "*?["):
            found = [Path(f) for f in sorted(glob.glob(spec))]
        else:
            found = [p]
        if not found or not all(f.exists() for f in found):
            raise FileNotFoundError(f"no input file at {spec!r}")
        out.extend(found)
    return out


def iter_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` for each row of a ``.jsonl``, ``.json`` (list) or ``.parquet`` file; ``where`` is
    ``file:line N`` or ``file:row N`` for error messages."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist()):
            yield f"{path}:row {i}", row
        return
    if path.suffix == ".json":
        data = read_json(path)
        if not isinstance(data, list):
            raise DataFormatError(f"{path}: expected a JSON list of rows, got {type(data).__name__}")
        for i, row in enumerate(data):
            yield f"{path}:item {i}", _object(row, f"{path}:item {i}")
        return
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFormatError(f"{where}: not JSON ({err.msg})") from None
            yield where, _object(row, where)


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataFormatError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def field_of(
    row: Mapping[str, Any], name: str, where: str, kind: type | tuple[type, ...] = str, nonempty: bool = True
) -> Any:
    """``row[name]`` checked for type (and non-emptiness); the error names where and the field."""
    if name not in row or row[name] is None:
        raise DataFormatError(f"{where}: missing field {name!r}")
    value = row[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise DataFormatError(f"{where}: field {name!r} must be {names}, got {type(value).__name__}")
    if nonempty and isinstance(value, (str, list, dict)) and not (value.strip() if isinstance(value, str) else value):
        raise DataFormatError(f"{where}: field {name!r} is empty")
    return value


def messages_of(value: Any, where: str, name: str) -> tuple[dict[str, str], ...]:
    """A ``[{role, content}]`` list, each entry checked."""
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise DataFormatError(
            f"{where}: field {name!r} must be a list of {{role, content}}, got {type(value).__name__}"
        )
    out = []
    for i, message in enumerate(value):
        at = f"{where}: {name}[{i}]"
        if not isinstance(message, Mapping):
            raise DataFormatError(f"{at} must be an object with 'role' and 'content'")
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise DataFormatError(f"{at} needs string 'role' and 'content', got {dict(message)!r:.120}")
        out.append({"role": role, "content": content})
    return tuple(out)


# ---------------------------------------------------------------------------------------------- RealUserSim PT3


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


# ---------------------------------------------------------------------------------------------- Turing (PRISM)


@dataclass(frozen=True)
class TuringRow:
    """One held-out target turn; ``key`` = ``user_id/post_id/target_idx``, each part escaped (E11)."""

    user_id: str
    post_id: str
    target_idx: int
    prompt: tuple[dict[str, str], ...]
    ground_truth: str
    user_history: str
    context: str

    @property
    def key(self) -> str:
        return join_id(self.user_id, self.post_id, self.target_idx)


def load_turing_rows(paths: Sequence[str]) -> list[TuringRow]:
    """turing-rl PRISM rows from parquet or JSONL: ``prompt``, ``reward_model.ground_truth``,
    ``extra_info{user_id, post_id, target_idx, user_history, context | thread_context}``.

    ``user_history`` may be empty (such rows are generated but skipped at scoring, as the reference).
    """
    rows: list[TuringRow] = []
    seen: dict[str, str] = {}
    for path in expand(paths):
        for where, row in iter_rows(path):
            prompt = messages_of(field_of(row, "prompt", where, (list, tuple)), where, "prompt")
            reward_model = field_of(row, "reward_model", where, dict)
            truth = field_of(reward_model, "ground_truth", f"{where}: reward_model", str)
            extra = field_of(row, "extra_info", where, dict)
            at = f"{where}: extra_info"
            context = extra.get("context", extra.get("thread_context"))
            if not isinstance(context, str):
                raise DataFormatError(f"{at}: missing string field 'context' (or 'thread_context')")
            target = field_of(extra, "target_idx", at, int)
            history = extra.get("user_history", "")
            if not isinstance(history, str):
                raise DataFormatError(f"{at}: field 'user_history' must be str, got {type(history).__name__}")
            item = TuringRow(
                user_id=str(field_of(extra, "user_id", at, (str, int))),
                post_id=str(field_of(extra, "post_id", at, (str, int))),
                target_idx=target,
                prompt=prompt,
                ground_truth=truth,
                user_history=history,
                context=context,
            )
            if item.key in seen:
                raise DataFormatError(f"{where}: row {item.key!r} already defined at {seen[item.key]}")
            seen[item.key] = where
            rows.append(item)
    if not rows:
        raise DataFormatError(f"no Turing rows in {list(paths)}")
    return rows


# ---------------------------------------------------------------------------------------------- SOUL (loader only)

# The single SOUL axis map (S23 in docs/decisions.md: the reference's two scorers disagreed on ROLE), keyed
# by the router keys of the simulator-RL tasks (the AlignX splits are ``alignx_<split>``).
SOUL_AXES: Mapping[str, tuple[str, ...]] = {
    "CONV": ("userllm", "mirrorbench", "humanual-chat", "sim_arena_doc"),
    "SS": ("sotopia",),
    "COG": ("fantom", "hitom", "paratomi", "social_r1"),
    "ROLE": (
        "coser",
        "lifechoices",
        "twinvoice",
        "behavior_chain",
        "sim_arena_math",
        "mistakes",
        "humanual-email",
        "humanual-news",
        "humanual-politics",
        "humanual-book",
        "humanual-opinion",
    ),
    "EVAL": (
        "alignx_demo",
        "alignx_pair",
        "alignx_ugc",
        "alignx_arbitrary",
        "alignx_history16",
        "socsci210",
        "humanllm",
    ),
}


@dataclass(frozen=True)
class SoulRow:
    data_source: str
    index: int
    prompt: tuple[dict[str, str], ...]
    extra_info: Mapping[str, Any]


def load_soul_validation(paths: Sequence[str]) -> dict[str, list[SoulRow]]:
    """SOUL validation parquets grouped by ``data_source``; every source must be one of the 27 of
    :data:`SOUL_AXES`, every row needs ``prompt`` and ``extra_info.index`` (unique per source)."""
    known = {source for sources in SOUL_AXES.values() for source in sources}
    out: dict[str, list[SoulRow]] = {}
    seen: set[tuple[str, int]] = set()
    for path in expand(paths):
        for where, row in iter_rows(path):
            source = field_of(row, "data_source", where)
            if source not in known:
                raise DataFormatError(f"{where}: data_source {source!r} is not a SOUL dataset (known: {sorted(known)})")
            extra = field_of(row, "extra_info", where, dict)
            index = field_of(extra, "index", f"{where}: extra_info", int)
            if (source, index) in seen:
                raise DataFormatError(f"{where}: {source} index {index} appears twice")
            seen.add((source, index))
            prompt = messages_of(field_of(row, "prompt", where, (list, tuple)), where, "prompt")
            out.setdefault(source, []).append(SoulRow(source, index, prompt, extra))
    return out
