"""Reading the suites' input files: paths expanded, rows of JSONL / JSON / parquet, checked fields.

What every suite's loader (``<suite>/data.py``) shares: each error names the file, the row and the field.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


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


def rows_of(paths: Sequence[str]) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """``(file, where, row)`` for every row of every file of ``paths``, in order (:func:`expand`, :func:`iter_rows`)."""
    for path in expand(paths):
        for where, row in iter_rows(path):
            yield path, where, row


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


def claim(seen: dict[Any, str], key: Any, where: str, what: str) -> None:
    """Record that ``key`` is defined at ``where``; one defined before is an error naming both places."""
    if key in seen:
        raise DataFormatError(f"{where}: {what} {key!r} already defined at {seen[key]}")
    seen[key] = where


def at_least_one(items: list[Any], what: str, paths: Sequence[str]) -> list[Any]:
    """``items``, or an error naming the inputs when they hold none."""
    if not items:
        raise DataFormatError(f"no {what} in {list(paths)}")
    return items


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


def read_published(path: Path) -> dict[str, Any]:
    """A suite's ``published.json``: the paper's rows, shown beside ours as context (our runs use other models and,
    offline, scripted ones), with ``rows`` as ``{model: (value per column, …)}``; a row of the wrong width is an
    error naming the file and the model."""
    data = read_json(path)
    columns = field_of(data, "columns", str(path), list)
    rows = {}
    for model, values in field_of(data, "rows", str(path), dict).items():
        if not isinstance(values, list) or len(values) != len(columns):
            raise DataFormatError(f"{path}: row {model!r} must list one number per column {columns}, got {values!r}")
        rows[model] = tuple(values)
    return {**data, "rows": rows}
