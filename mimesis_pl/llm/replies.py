"""The one reader of a JSON object in a model's reply (judges, raters, surveys), with each reference's leniency named.

The systems we reproduce read judge replies differently, and their numbers depend on it, so each reading is a named
choice (``read=``), not a private copy in the module that needs it:

- ``"userrl"`` (UserRL's gym judges; our served gym judges, A52): ``<think>`` blocks dropped; then the whole reply,
  each fenced block and the first-``{``-to-last-``}`` span are tried, each as JSON and then as a Python literal
  (UserRL's ``ast.literal_eval`` accepts ``True`` and single quotes).
- ``"largest"`` (the reference's simulator-RL judge, S86): the whole reply (one code fence removed, raw newlines
  inside strings escaped) as JSON; valid JSON that is not an object is refused; else the largest object decoded
  anywhere in it, so prose around the JSON is skipped.
- ``"outermost"`` (the reference's RealUserSim judge, strict, S88): code fences removed, then the span from the first
  ``{`` to the last ``}`` must be one JSON object; prose with braces around it, or two objects, is refused.
- ``"first"`` (Turing rating, τ-USI survey): the first ``{…}`` that decodes as a JSON object.

A reply with no such object raises ``error`` (the caller's failure type: a retry, a judge failure) with the reason.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Literal

JsonRead = Literal["userrl", "largest", "outermost", "first"]

_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_OUTER_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_SPAN = re.compile(r"\{.*\}", re.DOTALL)
_STRING_LITERAL = re.compile(r'"([^"\\]*(\\.[^"\\]*)*)"')


def reply_json_object(
    text: str, *, read: JsonRead, error: type[Exception] = ValueError, what: str = ""
) -> dict[str, Any]:
    """The JSON object in ``text`` as ``read`` finds it (module docstring), else ``error`` saying why (after
    ``what``, the reply's name, when given)."""
    readers = {"userrl": _userrl, "largest": _largest, "outermost": _outermost, "first": _first}
    if read not in readers:
        raise ValueError(f"read must be one of {sorted(readers)}, got {read!r}")
    found, why = readers[read](text or "")
    if found is None:
        raise error(f"{what}: {why}" if what else why)
    return found


def _userrl(text: str) -> tuple[dict[str, Any] | None, str]:
    body = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL).strip()
    candidates = [body, *(m.strip() for m in _FENCED.findall(body))]
    span = _SPAN.search(body)
    if span:
        candidates.append(span.group(0))
    for candidate in candidates:
        for loads in (json.loads, ast.literal_eval):
            try:
                data = loads(candidate)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(data, dict):
                return data, ""
    return None, f"judge reply is not a JSON object ({len(text)} chars)"


def _largest(text: str) -> tuple[dict[str, Any] | None, str]:
    body = _STRING_LITERAL.sub(lambda m: m.group().replace("\n", "\\n"), _OUTER_FENCE.sub(r"\1", text.strip()))
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        data = None
    if isinstance(data, dict):
        return data, ""
    if data is not None:  # valid JSON, but not an object: the reference rejects it too
        return None, f"reply is a JSON {type(data).__name__}, not an object"
    found = _objects(body)
    if not found:
        return None, "reply is not JSON and holds no JSON object"
    return max(found, key=lambda o: len(json.dumps(o))), ""


def _outermost(text: str) -> tuple[dict[str, Any] | None, str]:
    body = re.sub(r"^```(?:json)?|```$", "", text.strip(), flags=re.MULTILINE).strip()
    i, j = body.find("{"), body.rfind("}")
    if i < 0 or j < 0:
        return None, f"no JSON object in the judge reply: {body[:160]!r}"
    try:
        value = json.loads(body[i : j + 1])
    except json.JSONDecodeError as err:
        return None, f"the reply's outermost braces are not one JSON object ({err})"
    if not isinstance(value, dict):
        return None, "the judge reply is not a JSON object"
    return value, ""


def _first(text: str) -> tuple[dict[str, Any] | None, str]:
    found = _objects(text, first=True)
    return (found[0], "") if found else (None, f"no JSON object in the judge reply: {text[:160]!r}")


def _objects(text: str, *, first: bool = False) -> list[dict[str, Any]]:
    """The JSON objects that decode from each ``{`` of ``text`` (only the first one, with ``first``)."""
    found: list[dict[str, Any]] = []
    decoder, start = json.JSONDecoder(), text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            found.append(value)
            if first:
                break
        start = text.find("{", start + 1)
    return found
