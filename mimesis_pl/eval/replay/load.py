"""Read replay cases from YAML/JSON files or folders.

A file holds one case (a mapping) or a list of cases. YAML scalars are read with JSON-like rules: only
``true``/``false`` are booleans, numbers follow JSON syntax, and everything else stays a string —
``10:30``, ``2026-03-06``, ``no`` and ``007`` are kept as written, where the YAML 1.1 defaults would
silently turn them into a number, a date, ``False`` and 7: exactly the values people put in tool
arguments. Duplicate mapping keys are errors rather than "last one wins", in YAML and JSON alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path as FsPath
from typing import Any

import yaml

from mimesis_pl.eval.replay.case import ReplayCase
from mimesis_pl.eval.replay.validate import CaseFormatError, parse_case

CASE_SUFFIXES = (".yaml", ".yml", ".json")

_BOOL, _INT, _FLOAT, _TIMESTAMP = (f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "timestamp"))


class _CaseYamlLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalars and duplicate-key detection."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_CaseYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_CaseYamlLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_CaseYamlLoader.add_implicit_resolver(_INT, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
_CaseYamlLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)$"),
    list("-+0123456789"),
)


class _DuplicateJsonKey(ValueError):
    """A JSON object names one key twice (raised from the decoder's ``object_pairs_hook``)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateJsonKey(key)
        out[key] = value
    return out


def _load_json(text: str) -> Any:
    """``json.loads`` that rejects duplicate object keys, as the YAML loader does (decision E20)."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def read_case_file(path: str | FsPath) -> Any:
    """The raw content of one case file: a case (mapping) or a list of cases."""
    path = FsPath(path)
    if path.suffix not in CASE_SUFFIXES:
        raise CaseFormatError(
            f"unsupported file type {path.suffix!r}; use one of {list(CASE_SUFFIXES)}", source=str(path)
        )
    text = path.read_text(encoding="utf-8")
    try:
        data = _load_json(text) if path.suffix == ".json" else yaml.load(text, Loader=_CaseYamlLoader)
    except _DuplicateJsonKey as err:
        raise CaseFormatError(f"invalid JSON: duplicate key {err.args[0]!r}", source=str(path)) from None
    except json.JSONDecodeError as err:
        message = f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        raise CaseFormatError(message, source=str(path)) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise CaseFormatError(f"invalid YAML{at}: {problem}", source=str(path)) from None
    if data is None:
        raise CaseFormatError("file is empty; expected a case or a list of cases", source=str(path))
    return data


def _case_files(paths: Iterable[str | FsPath]) -> list[FsPath]:
    files: list[FsPath] = []
    for path in map(FsPath, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in CASE_SUFFIXES))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"replay case path {str(path)!r} does not exist")
    return files


def load_cases(*paths: str | FsPath) -> tuple[ReplayCase, ...]:
    """Load and validate every case in the given files and folders (folders: recursively, sorted).

    Raises :class:`CaseFormatError` for the first invalid case and when two cases share an id (the
    message names both files).
    """
    cases: list[ReplayCase] = []
    origin: dict[str, str] = {}
    for file in _case_files(paths):
        data = read_case_file(file)
        many = isinstance(data, list)
        for index, raw in enumerate(data if many else [data]):
            source = f"{file}[{index}]" if many else str(file)
            case = parse_case(raw, source=source)
            if case.id in origin:
                raise CaseFormatError(
                    f"duplicate case id; first defined in {origin[case.id]}", source=source, case_id=case.id
                )
            origin[case.id] = source
            cases.append(case)
    if not cases:
        raise FileNotFoundError(f"no replay cases ({', '.join(CASE_SUFFIXES)}) under {[str(p) for p in paths]}")
    return tuple(cases)
