"""Loading and validating hand-written cases: errors name file, case, turn, path, step and field."""

from __future__ import annotations

import copy
import json

import pytest

from mimesis_pl.eval.replay import CaseFormatError, load_cases, parse_case, read_case_file

TOOLS = [{"name": "search", "parameters": {"type": "object"}}]


def _case(**overrides):
    case = {
        "id": "c1",
        "tools": copy.deepcopy(TOOLS),
        "turns": [
            {
                "user": "hi",
                "paths": [
                    {
                        "id": "main",
                        "preferred": True,
                        "steps": [
                            {
                                "expect": {"tool": "search", "args": {"q": "x"}},
                                "observation": {"content": "r", "evidence": "recorded"},
                            },
                            {"expect": {"final": True, "contains_any": ["done"]}},
                        ],
                    },
                    {"id": "alt", "steps": [{"expect": {"final": True}}]},
                ],
            }
        ],
    }
    case.update(overrides)
    return case


def _error(raw) -> CaseFormatError:
    with pytest.raises(CaseFormatError) as info:
        parse_case(raw, source="cases/c1.yaml")
    return info.value


def test_error_names_case_turn_path_step_and_field() -> None:
    raw = _case()
    raw["turns"][0]["paths"][0]["steps"][0]["expect"]["args_any"] = {"when": "Friday"}
    err = _error(raw)
    assert (err.source, err.case_id, err.turn, err.path, err.step, err.field) == (
        "cases/c1.yaml",
        "c1",
        0,
        "main",
        0,
        "expect.args_any.when",
    )
    assert str(err).startswith("cases/c1.yaml, case 'c1', turn 0, path 'main', step 0, field 'expect.args_any.when': ")
    assert "non-empty list" in str(err) and "'Friday'" in str(err)


@pytest.mark.parametrize(
    "mutate, field, words",
    [
        (lambda c: c.pop("id"), "id", "missing"),
        (lambda c: c.update(turns=[]), "turns", "non-empty list"),
        (lambda c: c.update(colour="red"), None, "unknown key"),
        (lambda c: c["turns"][0]["paths"][1].update(preferred=True), "paths", "exactly one path"),
        (lambda c: c["turns"][0]["paths"][1].update(id="main"), "paths[1].id", "used twice"),
        (lambda c: c["turns"][0]["paths"][0]["steps"].reverse(), "expect.final", "last step"),
        (lambda c: c["turns"][0]["paths"][0]["steps"][0]["expect"].update(tool="nope"), "expect.tool", "not offered"),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][0]["observation"].pop("evidence"),
            "observation.evidence",
            "one of",
        ),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][0]["observation"].pop("content"),
            "observation.content",
            "recorded content",
        ),
        (lambda c: c["turns"][0]["paths"][0]["steps"][1]["expect"].update(final=False), "expect.final", "must be true"),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][1]["expect"].update(contains_any=[]),
            "expect.contains_any",
            "non-empty",
        ),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][0]["expect"].update(args_any={"q": ["y"]}),
            "expect.args_any.q",
            "also in args",
        ),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][0]["observation"].update(call_args={"q": "other"}),
            "observation.call_args",
            "does not satisfy",
        ),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][1].update(
                observation={"evidence": "recorded", "content": "x", "call_args": {}}
            ),
            "observation.call_args",
            "only a tool step",
        ),
        (
            lambda c: c["turns"][0]["paths"][0]["steps"][0]["expect"].update(args={"q": float("nan")}),
            "expect.args",
            "non-finite",
        ),
        (lambda c: c.update(tools=TOOLS + TOOLS), "tools[1].name", "defined twice"),
    ],
)
def test_each_rule_is_reported_where_it_is_broken(mutate, field, words) -> None:
    raw = _case()
    mutate(raw)
    err = _error(raw)
    assert err.field == field
    assert words in str(err)


def test_single_path_is_preferred_without_the_flag_and_input_is_not_mutated() -> None:
    raw = {"id": "solo", "turns": [{"user": "q", "paths": [{"id": "only", "steps": [{"expect": {"final": True}}]}]}]}
    before = copy.deepcopy(raw)
    case = parse_case(raw)
    assert raw == before
    assert case.turns[0].preferred.id == "only"


def test_structured_observation_becomes_json_text_and_openai_tool_format_is_accepted() -> None:
    raw = _case(tools=[{"type": "function", "function": {"name": "search", "description": "d"}}])
    raw["turns"][0]["paths"][0]["steps"][0]["observation"]["content"] = [{"b": 1, "a": "é"}]
    case = parse_case(raw)
    assert case.turns[0].paths[0].steps[0].observation.content == '[{"b": 1, "a": "é"}]'
    assert case.tools[0]["function"]["name"] == "search" and case.tools[0]["type"] == "function"


def test_yaml_keeps_dates_times_and_no_as_written(tmp_path) -> None:
    (tmp_path / "c.yaml").write_text(
        "id: y1\n"
        "context: {now: 2026-03-01T10:00:00Z, day: 2026-03-06}\n"
        "tools: [{name: book}]\n"
        "turns:\n"
        "  - user: book it\n"
        "    paths:\n"
        "      - id: p\n"
        "        steps:\n"
        "          - expect: {tool: book, args: {time: 10:30, answer: no, zip: 007, n: 12, x: 1.5, ok: true}}\n",
        encoding="utf-8",
    )
    (case,) = load_cases(tmp_path)
    assert dict(case.context) == {"now": "2026-03-01T10:00:00Z", "day": "2026-03-06"}
    assert dict(case.turns[0].paths[0].steps[0].expect.args) == {
        "time": "10:30",
        "answer": "no",
        "zip": "007",
        "n": 12,
        "x": 1.5,
        "ok": True,
    }


def test_yaml_duplicate_key_and_syntax_errors_name_the_file_and_line(tmp_path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("id: a\nid: b\nturns: []\n", encoding="utf-8")
    with pytest.raises(CaseFormatError, match=r"dup\.yaml: invalid YAML at line 2.*duplicate key 'id'"):
        read_case_file(path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x",\n "turns": [}', encoding="utf-8")
    with pytest.raises(CaseFormatError, match=r"bad\.json: invalid JSON at line 2"):
        read_case_file(bad)


def test_json_duplicate_keys_are_rejected_like_yaml(tmp_path) -> None:
    # Nested too: a step's expectation naming "tool" twice would otherwise keep only the last one.
    case = json.dumps(_case()).replace('"tool": "search"', '"tool": "lookup", "tool": "search"')
    path = tmp_path / "dup.json"
    path.write_text(case, encoding="utf-8")
    with pytest.raises(CaseFormatError, match=r"dup\.json: invalid JSON: duplicate key 'tool'"):
        read_case_file(path)


def test_list_files_and_duplicate_ids_across_files(tmp_path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([_case(id="x"), _case(id="y")]), encoding="utf-8")
    (tmp_path / "b.yml").write_text(json.dumps(_case(id="z")), encoding="utf-8")  # JSON is YAML
    assert [c.id for c in load_cases(tmp_path)] == ["x", "y", "z"]
    (tmp_path / "c.json").write_text(json.dumps(_case(id="y")), encoding="utf-8")
    with pytest.raises(CaseFormatError, match=r"c\.json, case 'y': duplicate case id; first defined in .*a\.json\[1\]"):
        load_cases(tmp_path)


def test_errors_inside_a_list_file_name_the_entry(tmp_path) -> None:
    broken = _case(id="second")
    broken["turns"][0]["paths"][0]["steps"][0]["expect"]["tool"] = "missing"
    (tmp_path / "many.json").write_text(json.dumps([_case(id="first"), broken]), encoding="utf-8")
    with pytest.raises(CaseFormatError, match=r"many\.json\[1\], case 'second', turn 0, path 'main', step 0"):
        load_cases(tmp_path)


def test_shipped_sample_cases_load_and_cover_the_issue() -> None:
    cases = load_cases("assets/replay")
    assert len(cases) >= 12
    by_id = {c.id: c for c in cases}
    multi_step = [c for c in cases if any(len(p.steps) >= 3 for t in c.turns for p in t.paths)]
    two_turn = [c for c in cases if len(c.turns) >= 2]
    unevidenced = [
        c
        for c in cases
        if any(not s.has_evidence and not s.is_final for t in c.turns for p in t.paths for s in p.steps[:-1])
    ]
    assert multi_step and two_turn and unevidenced
    refund = by_id["refund-002"].turns[0]
    assert refund.paths[0].steps[0] == refund.paths[1].steps[0] != refund.paths[1].steps[1]
