"""Pure comparisons of one agent action with one expectation (shared by the validator and the scorer).

Each function returns the list of reasons the action does *not* match; an empty list is a match. The
reasons end up in the artifacts, so they name the argument and both values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mimesis_pl.eval.replay.case import FinalExpectation, ToolExpectation
from mimesis_pl.eval.values import canonical_json, json_equal

_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Case- and whitespace-insensitive form used for ``contains_*`` phrases."""
    return _SPACE.sub(" ", text.casefold()).strip()


def _show(value: Any) -> str:
    text = canonical_json(value)
    return text if len(text) <= 120 else text[:117] + "..."


def tool_call_mismatches(expect: ToolExpectation, name: str, arguments: Mapping[str, Any]) -> list[str]:
    """Why the call ``name(arguments)`` does not satisfy ``expect`` (empty when it does)."""
    if name != expect.tool:
        return [f"called tool {name!r}, expected {expect.tool!r}"]
    reasons: list[str] = []
    for key, wanted in expect.args.items():
        if key not in arguments:
            reasons.append(f"argument {key!r} missing (expected {_show(wanted)})")
        elif not json_equal(wanted, arguments[key]):
            reasons.append(f"argument {key!r} is {_show(arguments[key])}, expected {_show(wanted)}")
    for key, options in expect.args_any.items():
        if key not in arguments:
            reasons.append(f"argument {key!r} missing (expected one of {_show(list(options))})")
        elif not any(json_equal(option, arguments[key]) for option in options):
            reasons.append(f"argument {key!r} is {_show(arguments[key])}, expected one of {_show(list(options))}")
    if not expect.allow_extra_args:
        extra = sorted(set(arguments) - set(expect.args) - set(expect.args_any))
        if extra:
            reasons.append(f"unexpected argument(s) {extra} (allow_extra_args is false)")
    return reasons


def final_reply_mismatches(expect: FinalExpectation, text: str) -> list[str]:
    """Why ``text`` fails the phrase criteria of ``expect`` (the ``judge`` rubric is checked elsewhere)."""
    reply = normalise_text(text)
    reasons: list[str] = []
    if expect.contains_any and not any(normalise_text(p) in reply for p in expect.contains_any):
        reasons.append(f"reply contains none of {list(expect.contains_any)}")
    missing = [p for p in expect.contains_all if normalise_text(p) not in reply]
    if missing:
        reasons.append(f"reply lacks {missing} (contains_all)")
    return reasons
