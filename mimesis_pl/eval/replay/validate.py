"""Validate a raw (parsed YAML/JSON) v1 replay case and build the frozen :class:`ReplayCase`.

Cases are written by hand, so every error is a :class:`CaseFormatError` whose message names the file,
case id, turn, path, step and field, says what was found and what would be right. The raw input is
never modified.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mimesis_pl.eval.replay.case import (
    FinalExpectation,
    Observation,
    Path,
    ReplayCase,
    Step,
    ToolExpectation,
    Turn,
)
from mimesis_pl.eval.replay.matching import tool_call_mismatches
from mimesis_pl.eval.values import freeze, json_value_problem

CASE_KEYS = ("id", "description", "system", "context", "tools", "turns")
TURN_KEYS = ("user", "context", "paths")
PATH_KEYS = ("id", "preferred", "description", "steps")
STEP_KEYS = ("expect", "observation")
TOOL_EXPECT_KEYS = ("tool", "args", "args_any", "allow_extra_args")
FINAL_EXPECT_KEYS = ("final", "contains_any", "contains_all", "judge")
OBSERVATION_KEYS = ("evidence", "content", "call_args")
EVIDENCE = ("recorded", "none")


class CaseFormatError(ValueError):
    """A replay case that does not follow the v1 format; the attributes locate the problem."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        case_id: str | None = None,
        turn: int | None = None,
        path: str | None = None,
        step: int | None = None,
        field: str | None = None,
    ) -> None:
        self.source, self.case_id, self.turn, self.path, self.step, self.field = (
            source,
            case_id,
            turn,
            path,
            step,
            field,
        )
        where = [source] if source else []
        if case_id is not None:
            where.append(f"case {case_id!r}")
        if turn is not None:
            where.append(f"turn {turn}")
        if path is not None:
            where.append(f"path {path!r}")
        if step is not None:
            where.append(f"step {step}")
        if field is not None:
            where.append(f"field {field!r}")
        self.reason = message
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class _Where:
    """The location being validated; ``fail`` raises a CaseFormatError there."""

    def __init__(
        self,
        source: str | None,
        case_id: str | None = None,
        turn: int | None = None,
        path: str | None = None,
        step: int | None = None,
    ) -> None:
        self.source, self.case_id, self.turn, self.path, self.step = source, case_id, turn, path, step

    def at(self, **kwargs: Any) -> _Where:
        fields = dict(source=self.source, case_id=self.case_id, turn=self.turn, path=self.path, step=self.step)
        fields.update(kwargs)
        return _Where(**fields)

    def fail(self, field: str | None, message: str) -> CaseFormatError:
        return CaseFormatError(
            message,
            source=self.source,
            case_id=self.case_id,
            turn=self.turn,
            path=self.path,
            step=self.step,
            field=field,
        )

    def mapping(self, value: Any, field: str | None, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(field, f"must be a mapping, got {type(value).__name__} {_short(value)}")
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise self.fail(field, f"unknown key(s) {unknown}; allowed: {list(allowed)}")
        return value

    def text(self, value: Any, field: str, *, allow_empty: bool = False) -> str:
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            raise self.fail(field, f"must be a non-empty string, got {_short(value)}")
        return value

    def json_value(self, value: Any, field: str) -> Any:
        problem = json_value_problem(value)
        if problem:
            raise self.fail(field, f"not a JSON value: {problem}")
        return value

    def phrases(self, value: Any, field: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(field, f"must be a non-empty list of non-empty strings, got {_short(value)}")
        return tuple(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_case(raw: Any, source: str | None = None) -> ReplayCase:
    """Validate one raw case (a mapping as loaded from YAML/JSON) and return it frozen."""
    where = _Where(source)
    raw = where.mapping(raw, None, CASE_KEYS)
    if "id" not in raw:
        raise where.fail("id", "missing; every case needs a unique string id")
    case_id = where.text(raw["id"], "id")
    where = where.at(case_id=case_id)
    if "description" in raw:
        where.text(raw["description"], "description", allow_empty=True)
    system = where.text(raw["system"], "system") if raw.get("system") is not None else None
    context = _context(where, raw.get("context", {}), "context")
    tools = _tools(where, raw.get("tools", []))
    turns_raw = raw.get("turns")
    if not isinstance(turns_raw, list) or not turns_raw:
        raise where.fail("turns", f"must be a non-empty list of turns, got {_short(turns_raw)}")
    tool_names = {t["function"]["name"] for t in tools}
    turns = tuple(_turn(where.at(turn=i), t, tool_names) for i, t in enumerate(turns_raw))
    return ReplayCase(
        id=case_id,
        turns=turns,
        tools=tuple(freeze(t) for t in tools),
        context=freeze(context),
        system=system,
        source=source,
    )


def _context(where: _Where, value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise where.fail(field, f"must be a mapping of request context values, got {_short(value)}")
    where.json_value(value, field)
    return dict(value)


def _tools(where: _Where, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise where.fail("tools", f"must be a list of tool schemas, got {_short(value)}")
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, tool in enumerate(value):
        field = f"tools[{i}]"
        if isinstance(tool, Mapping) and tool.get("type") == "function" and "function" in tool:
            where.mapping(tool, field, ("type", "function"))
            tool, field = tool["function"], f"{field}.function"
        tool = where.mapping(tool, field, ("name", "description", "parameters", "strict"))
        name = where.text(tool.get("name"), f"{field}.name")
        if name in seen:
            raise where.fail(f"{field}.name", f"tool {name!r} is defined twice")
        seen.add(name)
        where.json_value(tool, field)
        if "parameters" in tool and not isinstance(tool["parameters"], Mapping):
            raise where.fail(f"{field}.parameters", "must be a JSON-schema object")
        tools.append({"type": "function", "function": dict(tool)})
    return tools


def _turn(where: _Where, raw: Any, tool_names: set[str]) -> Turn:
    raw = where.mapping(raw, None, TURN_KEYS)
    user = where.text(raw.get("user"), "user")
    context = _context(where, raw.get("context", {}), "context")
    paths_raw = raw.get("paths")
    if not isinstance(paths_raw, list) or not paths_raw:
        raise where.fail("paths", f"must be a non-empty list of paths, got {_short(paths_raw)}")
    paths: list[Path] = []
    for i, path_raw in enumerate(paths_raw):
        field = f"paths[{i}]"
        path_raw = where.mapping(path_raw, field, PATH_KEYS)
        path_id = where.text(path_raw.get("id"), f"{field}.id")
        if any(p.id == path_id for p in paths):
            raise where.fail(f"{field}.id", f"path id {path_id!r} is used twice in this turn")
        paths.append(_path(where.at(path=path_id), path_raw, tool_names))
    preferred = [p.id for p in paths if p.preferred]
    if len(paths) == 1 and not preferred:
        # A turn with a single path has nothing to prefer it over; requiring the flag only adds noise.
        paths[0] = Path(id=paths[0].id, preferred=True, steps=paths[0].steps)
    elif len(preferred) != 1:
        raise where.fail("paths", f"exactly one path must have preferred: true, found {len(preferred)} {preferred}")
    return Turn(user=user, paths=tuple(paths), context=freeze(context))


def _path(where: _Where, raw: Mapping[str, Any], tool_names: set[str]) -> Path:
    preferred = raw.get("preferred", False)
    if not isinstance(preferred, bool):
        raise where.fail("preferred", f"must be true or false, got {_short(preferred)}")
    if "description" in raw:
        where.text(raw["description"], "description", allow_empty=True)
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise where.fail("steps", f"must be a non-empty list of steps, got {_short(steps_raw)}")
    steps = tuple(_step(where.at(step=i), s, tool_names) for i, s in enumerate(steps_raw))
    for i, step in enumerate(steps[:-1]):
        if step.is_final:
            raise where.at(step=i).fail(
                "expect.final", "a final reply ends the turn, so it must be the path's last step"
            )
    return Path(id=raw["id"], preferred=preferred, steps=steps)


def _step(where: _Where, raw: Any, tool_names: set[str]) -> Step:
    raw = where.mapping(raw, None, STEP_KEYS)
    if "expect" not in raw:
        raise where.fail("expect", "missing; a step needs an expectation (a tool call or final: true)")
    expect_raw = raw["expect"]
    if isinstance(expect_raw, Mapping) and "tool" in expect_raw:
        expect: ToolExpectation | FinalExpectation = _tool_expect(where, expect_raw, tool_names)
    elif isinstance(expect_raw, Mapping) and "final" in expect_raw:
        expect = _final_expect(where, expect_raw)
    else:
        raise where.fail(
            "expect",
            f"must name a tool ({{tool: ...}}) or be a final reply ({{final: true}}), got {_short(expect_raw)}",
        )
    observation = _observation(where, raw["observation"], expect) if raw.get("observation") is not None else None
    return Step(expect=expect, observation=observation)


def _tool_expect(where: _Where, raw: Mapping[str, Any], tool_names: set[str]) -> ToolExpectation:
    where.mapping(raw, "expect", TOOL_EXPECT_KEYS)
    tool = where.text(raw["tool"], "expect.tool")
    if tool not in tool_names:
        raise where.fail("expect.tool", f"tool {tool!r} is not offered by the case; tools: {sorted(tool_names)}")
    args = raw.get("args", {})
    if not isinstance(args, Mapping):
        raise where.fail("expect.args", f"must be a mapping of argument values, got {_short(args)}")
    where.json_value(args, "expect.args")
    args_any = raw.get("args_any", {})
    if not isinstance(args_any, Mapping):
        raise where.fail(
            "expect.args_any", f"must map argument names to lists of acceptable values, got {_short(args_any)}"
        )
    for key, options in args_any.items():
        if not isinstance(options, list) or not options:
            raise where.fail(
                f"expect.args_any.{key}", f"must be a non-empty list of acceptable values, got {_short(options)}"
            )
        where.json_value(options, f"expect.args_any.{key}")
        if key in args:
            raise where.fail(
                f"expect.args_any.{key}", "the argument is also in args; give it in one of args / args_any"
            )
    allow_extra = raw.get("allow_extra_args", False)
    if not isinstance(allow_extra, bool):
        raise where.fail("expect.allow_extra_args", f"must be true or false, got {_short(allow_extra)}")
    return ToolExpectation(
        tool=tool,
        args=freeze(args),
        args_any=freeze({k: list(v) for k, v in args_any.items()}),
        allow_extra_args=allow_extra,
    )


def _final_expect(where: _Where, raw: Mapping[str, Any]) -> FinalExpectation:
    where.mapping(raw, "expect", FINAL_EXPECT_KEYS)
    if raw["final"] is not True:
        raise where.fail("expect.final", f"must be true for a final reply, got {_short(raw['final'])}")
    contains_any = where.phrases(raw["contains_any"], "expect.contains_any") if "contains_any" in raw else ()
    contains_all = where.phrases(raw["contains_all"], "expect.contains_all") if "contains_all" in raw else ()
    judge = where.text(raw["judge"], "expect.judge") if "judge" in raw else None
    return FinalExpectation(contains_any=contains_any, contains_all=contains_all, judge=judge)


def _observation(where: _Where, raw: Any, expect: ToolExpectation | FinalExpectation) -> Observation:
    raw = where.mapping(raw, "observation", OBSERVATION_KEYS)
    evidence = raw.get("evidence")
    if evidence not in EVIDENCE:
        raise where.fail("observation.evidence", f"must be one of {list(EVIDENCE)}, got {_short(evidence)}")
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        where.json_value(content, "observation.content")
        # Structured outputs become the JSON text a tool would have returned; keys keep their order.
        content = json.dumps(content, ensure_ascii=False)
    if evidence == "recorded" and content is None:
        raise where.fail("observation.content", "evidence: recorded needs the recorded content (or use evidence: none)")
    call_args = raw.get("call_args")
    if call_args is not None:
        if isinstance(expect, FinalExpectation):
            raise where.fail("observation.call_args", "only a tool step has call arguments")
        if not isinstance(call_args, Mapping):
            raise where.fail("observation.call_args", f"must be a mapping of argument values, got {_short(call_args)}")
        where.json_value(call_args, "observation.call_args")
        problems = tool_call_mismatches(expect, expect.tool, call_args)
        if problems:
            raise where.fail(
                "observation.call_args",
                "the recorded call does not satisfy the step's own expectation: " + "; ".join(problems),
            )
        call_args = freeze(call_args)
    return Observation(evidence=evidence, content=content, call_args=call_args)


__all__ = ["CaseFormatError", "parse_case"]
