"""Reading the fields of a single-turn row as the reference's preprocessing writes them (pure, no I/O).

Every reader takes the row (for its name) and the field's dotted name, and raises a :class:`RowError` naming
file/row and field when the value cannot be read: a row the task cannot score is a ``task_error``, never a
silent 0 (docs/decisions.md S50). Lists stored as strings are parsed with ``json`` or ``ast.literal_eval``,
never ``eval`` (S6).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from .base import RowError, row_name

_MISSING = object()


def row_error(row: Mapping[str, Any], name: str, problem: str) -> RowError:
    """``RowError("<file:rowN>: field extra_info.<name> <problem>")``."""
    return RowError(f"{row_name(row)}: field extra_info.{name} {problem}")


def first_of(info: Mapping[str, Any], *names: str, default: Any = _MISSING) -> Any:
    """The first of ``names`` whose value is present, non-null and non-empty; ``default`` (or ``None``) else."""
    for name in names:
        value = info.get(name)
        if value is None:
            continue
        try:
            empty = len(value) == 0  # str, list, dict, numpy array
        except TypeError:
            empty = False
        if not empty:
            return value
    return None if default is _MISSING else default


def required(info: Mapping[str, Any], row: Mapping[str, Any], *names: str) -> Any:
    """:func:`first_of` ``names``; a :class:`RowError` naming them when none is present."""
    value = first_of(info, *names)
    if value is None:
        raise row_error(row, " or extra_info.".join(names), "is required (missing, null or empty)")
    return value


def required_text(info: Mapping[str, Any], row: Mapping[str, Any], *names: str) -> str:
    """:func:`required` as stripped text; whitespace only counts as missing."""
    text = as_text(first_of(info, *names))
    if not text:
        raise row_error(row, " or extra_info.".join(names), "is required (missing, null or empty)")
    return text


def as_text(value: Any) -> str:
    """``str(value)`` stripped; ``None`` → ``""``."""
    return "" if value is None else str(value).strip()


def literal_list(value: str) -> list | None:
    """The list a string encodes as JSON or as a Python literal, else ``None``."""
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
    return None


def as_list(value: Any, row: Mapping[str, Any], name: str) -> list:
    """A list from a list/tuple/array or its JSON / Python-literal string; a :class:`RowError` otherwise."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays from parquet
        return list(value.tolist())
    if isinstance(value, str):
        parsed = literal_list(value)
        if parsed is not None:
            return parsed
    raise row_error(row, name, f"must be a list or its JSON/Python-list string, got {value!r:.80}")


def as_json_list(value: Any, row: Mapping[str, Any], name: str) -> list:
    """A list from a list or its **JSON** string (TwinVoice's fields): a non-JSON string is a row error."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise row_error(row, name, f"is not valid JSON ({err})") from None
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        return as_list(value, row, name)
    raise row_error(row, name, f"must be a list or a JSON list string, got {type(value).__name__}")


def as_mapping(value: Any, row: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A dict from a mapping or its JSON-object string; a :class:`RowError` otherwise."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise row_error(row, name, f"is not valid JSON ({err})") from None
    if not isinstance(value, Mapping):
        raise row_error(row, name, f"must be a mapping (or a JSON object string), got {type(value).__name__}")
    return dict(value)


def as_index(value: Any, row: Mapping[str, Any], name: str, size: int) -> int:
    """An integer in ``[0, size)`` from an int or an int string; never wrapped (``-1``) or out of range."""
    integer_like = isinstance(value, (int, str)) or hasattr(value, "__index__")  # numpy ints have __index__
    if isinstance(value, bool) or not integer_like:
        raise row_error(row, name, f"must be an integer 0-{size - 1}, got {value!r:.40}")
    try:
        index = int(value)
    except ValueError:
        raise row_error(row, name, f"must be an integer 0-{size - 1}, got {value!r:.40}") from None
    if not 0 <= index < size:
        raise row_error(row, name, f"must be an integer 0-{size - 1}, got {index}")
    return index


def as_letter(value: Any, row: Mapping[str, Any], name: str, letters: str) -> str:
    """One option letter of ``letters`` (stripped, upper-cased); ``"Answer: B"`` or ``"E"`` is a row error."""
    letter = as_text(value).upper()
    if len(letter) != 1 or letter not in letters:
        raise row_error(row, name, f"must be one letter of {letters}, got {value!r:.40}")
    return letter


def conversation_prompt(info: Mapping[str, Any], row: Mapping[str, Any], *fallbacks: str) -> str:
    """``prompt_text``, else ``conversations[0].messages[0].content``, else the ``fallbacks`` fields."""
    text = as_text(info.get("prompt_text"))
    conversations = info.get("conversations")
    if not text and conversations:
        try:
            text = as_text(conversations[0]["messages"][0]["content"])
        except (KeyError, IndexError, TypeError):
            raise row_error(
                row, "conversations", "must be [{messages: [{content: ...}, ...]}, ...] (or give prompt_text)"
            ) from None
    if not text:
        text = as_text(first_of(info, *fallbacks)) if fallbacks else ""
    if not text:
        raise row_error(row, " or ".join(("prompt_text", "conversations", *fallbacks)), "is required (none is set)")
    return text
