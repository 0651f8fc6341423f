"""JSON values shared by the evaluation: deep-freezing, canonical serialisation and tolerant equality.

Replay cases, trial records and the suites' cached items are frozen on the way in (mappings become
``MappingProxyType``, lists become tuples), so "nothing downstream mutates its input" is a property of the
types rather than a promise; trial keys and settings hashes use :func:`canonical_json`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


def freeze(value: Any) -> Any:
    """Deep-freeze a JSON-like value: dict -> read-only mapping, list/tuple -> tuple."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Inverse of :func:`freeze`: fresh, mutable dicts and lists (safe to hand to a client)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Byte-stable JSON of a (possibly frozen) value: sorted keys, no extra whitespace, UTF-8 kept."""
    return json.dumps(thaw(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_value_problem(value: Any) -> str | None:
    """Why ``value`` is not plain JSON (str, finite number, bool, null, list, object with str keys), or None."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"non-finite number {value!r}"
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            problem = json_value_problem(item)
            if problem:
                return f"[{i}]: {problem}"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"key {key!r} is a {type(key).__name__}, not a string"
            problem = json_value_problem(item)
            if problem:
                return f".{key}: {problem}"
        return None
    return f"{type(value).__name__} value {value!r} is not JSON (quote it in YAML)"


def json_equal(expected: Any, actual: Any) -> bool:
    """Equality of JSON values where ``2 == 2.0`` but ``true != 1`` and ``"2" != 2``.

    Python's ``==`` already equates ints and floats; what it gets wrong for tool arguments is
    ``True == 1``, so booleans are compared only with booleans.
    """
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected is actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    if isinstance(expected, str) or isinstance(actual, str):
        return isinstance(expected, str) and isinstance(actual, str) and expected == actual
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(json_equal(expected[k], actual[k]) for k in expected)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(json_equal(e, a) for e, a in zip(expected, actual))
    return False
