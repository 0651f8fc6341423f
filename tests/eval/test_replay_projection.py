"""The seven projection invariants (docs/decisions.md E3), on generated cases and on worked examples."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from replay_case_strategies import CaseModel, replay_cases, tokens_in, user_tokens

from mimesis_pl.eval.replay import load_cases, parse_case, project

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _request_text(request) -> str:
    """Everything a request carries: what is sent (to_openai), its id and its provenance."""
    return json.dumps(request.to_dict(), ensure_ascii=False) + repr(request)


def _status(model: CaseModel) -> dict[tuple[int, str, int], str]:
    """Independent model of which (turn, path, step) must be replayed or skipped."""
    out: dict[tuple[int, str, int], str] = {}
    carry_ok = True
    for t, turn in enumerate(model.turns):
        for pid, steps in turn.paths.items():
            for n in range(len(steps)):
                ok = carry_ok and all(s.has_evidence for s in steps[:n])
                out[(t, pid, n)] = "request" if ok else "skipped"
        carry_ok = carry_ok and all(s.has_evidence for s in turn.paths[turn.preferred])
    return out


@SETTINGS
@given(replay_cases())
def test_step_n_request_holds_exactly_the_recorded_steps_before_n(model: CaseModel) -> None:
    # Invariants 1, 3 and 5: history = earlier turns' preferred paths + this path's steps 0..N-1,
    # recorded evidence only, and never another path's fixture.
    plan = project(parse_case(model.raw))
    for request in plan.requests:
        oracles = plan.expected[request.id]
        t, n = request.turn, request.step
        prefixes = {tuple(s.uid for s in model.turns[t].paths[o.path_id][:n]) for o in oracles}
        assert len(prefixes) == 1, f"{request.id}: oracles with different histories grouped together"
        wanted = set().union(*(user_tokens(model, k) for k in range(t + 1)))
        for k in range(t):
            turn = model.turns[k]
            wanted |= set().union(*(s.recorded for s in turn.paths[turn.preferred]))
        wanted |= set().union(set(), *(s.recorded for s in model.turns[t].paths[oracles[0].path_id][:n]))
        found = {tok for tok in tokens_in(_request_text(request)) if tok.startswith("REC")}
        assert found == wanted, f"{request.id}: extra {found - wanted}, missing {wanted - found}"


@SETTINGS
@given(replay_cases())
def test_no_expectation_text_or_path_id_in_any_request(model: CaseModel) -> None:
    # Invariant 2: phrases, rubrics, unrecorded acceptable values and path ids never enter a request.
    plan = project(parse_case(model.raw))
    for request in plan.requests:
        leaked = {tok for tok in tokens_in(_request_text(request)) if not tok.startswith("REC")}
        assert not leaked, f"{request.id} carries expectation-only text {leaked}"
    # ...while the scorer's side carries every expectation of every requested step.
    for request in plan.requests:
        for oracle in plan.expected[request.id]:
            template = model.turns[oracle.turn].paths[oracle.path_id][oracle.step]
            wanted = {tok for tok in tokens_in(json.dumps(template.raw["expect"])) if tok.startswith("EXP")}
            assert wanted <= tokens_in(json.dumps(oracle.to_dict()))


@SETTINGS
@given(replay_cases())
def test_every_step_is_requested_once_or_skipped_with_a_reason(model: CaseModel) -> None:
    # Invariant 3 (evidence gates history) seen from the plan's coverage.
    plan = project(parse_case(model.raw))
    covered: dict[tuple[int, str, int], int] = {}
    for request in plan.requests:
        for oracle in plan.expected[request.id]:
            key = (oracle.turn, oracle.path_id, oracle.step)
            assert (request.turn, request.step) == (oracle.turn, oracle.step)
            covered[key] = covered.get(key, 0) + 1
    skipped = {(s.turn, s.path_id, s.step): s.reason for s in plan.skipped}
    for key, status in _status(model).items():
        if status == "request":
            assert covered.get(key) == 1 and key not in skipped, key
        else:
            assert key not in covered and "not replayable" in skipped[key], key
    assert set(covered) | set(skipped) == set(_status(model))


@SETTINGS
@given(replay_cases())
def test_context_is_the_turns_real_conditions(model: CaseModel) -> None:
    # Invariant 4: case context overlaid with the turn's own context, values unchanged.
    plan = project(parse_case(model.raw))
    for request in plan.requests:
        raw_turn = model.raw["turns"][request.turn]
        assert request.to_openai()["context"] == {**model.raw["context"], **raw_turn.get("context", {})}


@SETTINGS
@given(replay_cases())
def test_projection_is_deterministic_and_does_not_mutate(model: CaseModel) -> None:
    # Invariant 6.
    raw_before = copy.deepcopy(model.raw)
    case = parse_case(model.raw)
    assert model.raw == raw_before
    first = project(case)
    assert case == parse_case(copy.deepcopy(raw_before))
    assert first.to_json() == project(case).to_json() == project(parse_case(raw_before)).to_json()
    # A request's messages are fresh copies: editing them cannot reach the plan.
    for request in first.requests:
        payload = request.to_openai()
        payload["messages"].append({"role": "user", "content": "tampered"})
    assert first.to_json() == project(case).to_json()


@SETTINGS
@given(replay_cases())
def test_tool_outputs_reference_only_completed_earlier_steps(model: CaseModel) -> None:
    # Invariant 7: each tool message answers a call made earlier in the same request, by a step that
    # is complete (an earlier turn, or an earlier step of this turn), and each call is answered once.
    plan = project(parse_case(model.raw))
    for request in plan.requests:
        calls: dict[str, int] = {}
        answered: set[str] = set()
        for index, message in enumerate(request.to_openai()["messages"]):
            for call in message.get("tool_calls", ()):
                assert call["id"] not in calls
                calls[call["id"]] = index
            if message["role"] == "tool":
                ref = message["tool_call_id"]
                assert ref in calls and calls[ref] < index, f"{request.id}: dangling tool output {ref}"
                assert ref not in answered
                answered.add(ref)
        for entry in request.history:
            assert (entry.turn, entry.step) < (request.turn, request.step)
            assert entry.source == "fixture"


def test_alternatives_diverging_at_step_1_get_their_own_fixture() -> None:
    raw = {
        "id": "diverge",
        "tools": [{"name": "lookup"}, {"name": "refund"}, {"name": "escalate"}],
        "turns": [
            {
                "user": "broken order",
                "paths": [
                    {
                        "id": "A",
                        "preferred": True,
                        "steps": [
                            {
                                "expect": {"tool": "lookup", "args": {"id": 1}},
                                "observation": {"content": "found", "evidence": "recorded", "call_args": {"id": 1}},
                            },
                            {
                                "expect": {"tool": "refund"},
                                "observation": {"content": "REFUNDED-OUTPUT", "evidence": "recorded", "call_args": {}},
                            },
                            {"expect": {"final": True, "contains_any": ["refund"]}},
                        ],
                    },
                    {
                        "id": "B",
                        "steps": [
                            {
                                "expect": {"tool": "lookup", "args": {"id": 1}},
                                "observation": {"content": "found", "evidence": "recorded", "call_args": {"id": 1}},
                            },
                            {
                                "expect": {"tool": "escalate"},
                                "observation": {"content": "ESCALATED-OUTPUT", "evidence": "recorded", "call_args": {}},
                            },
                            {"expect": {"final": True, "contains_any": ["escalat"]}},
                        ],
                    },
                ],
            }
        ],
    }
    plan = project(parse_case(raw))
    assert [r.id for r in plan.requests] == [
        "diverge:t0:s0:h0",
        "diverge:t0:s1:h0",
        "diverge:t0:s2:h0",
        "diverge:t0:s2:h1",
    ]
    assert [o.path_id for o in plan.expected["diverge:t0:s1:h0"]] == ["A", "B"]  # shared history: both oracles
    a_final, b_final = plan.requests[2], plan.requests[3]
    assert [o.path_id for o in plan.expected[a_final.id]] == ["A"]
    assert [o.path_id for o in plan.expected[b_final.id]] == ["B"]
    assert "REFUNDED-OUTPUT" in _request_text(a_final) and "ESCALATED-OUTPUT" not in _request_text(a_final)
    assert "ESCALATED-OUTPUT" in _request_text(b_final) and "REFUNDED-OUTPUT" not in _request_text(b_final)


def test_later_turns_carry_the_preferred_path_forward(tmp_path) -> None:
    (case,) = [c for c in load_cases("assets/replay") if c.id == "restaurant-004"]
    plan = project(case)
    turn1 = [r for r in plan.requests if r.turn == 1]
    messages = turn1[0].to_openai()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert messages[4]["content"] == "Bangkok Garden and Lotus are both well reviewed."
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Leeds", "cuisine": "Thai"}
    assert [h.kind for h in turn1[0].history] == ["call", "observation", "reply"]


def test_unevidenced_observation_skips_later_steps_with_reason() -> None:
    (case,) = [c for c in load_cases("assets/replay") if c.id == "support-005"]
    plan = project(case)
    assert [r.id for r in plan.requests] == ["support-005:t0:s0:h0"]
    assert [(s.step, s.reason) for s in plan.skipped] == [
        (1, "not replayable: step 0 of path 'diagnose' has observation evidence 'none', not 'recorded'"),
        (2, "not replayable: step 0 of path 'diagnose' has observation evidence 'none', not 'recorded'"),
    ]


def test_unrecorded_reply_skips_the_next_turn() -> None:
    (case,) = [c for c in load_cases("assets/replay") if c.id == "notes-006"]
    plan = project(case)
    assert {r.turn for r in plan.requests} == {0}
    assert [(s.turn, s.path_id, s.step) for s in plan.skipped] == [(1, "remind", 0)]
    assert "step 1 of path 'note' has no recorded reply" in plan.skipped[0].reason


def _one_turn(*paths) -> dict:
    return {"id": "c", "tools": [{"name": "search"}], "turns": [{"user": "find it", "paths": list(paths)}]}


def test_a_call_without_recorded_arguments_never_enters_history() -> None:
    # Rules 2 and 3: the tool output was recorded, the call's arguments were not. Rebuilding the call from the
    # expectation would show "EXP-CITY"/"EXP-DATE-1" to step 1; it is skipped, with the reason, instead.
    step0 = {
        "expect": {"tool": "search", "args": {"city": "EXP-CITY"}, "args_any": {"date": ["EXP-DATE-1", "EXP-DATE-2"]}},
        "observation": {"content": "REC-OUTPUT", "evidence": "recorded"},
    }
    plan = project(parse_case(_one_turn({"id": "p", "steps": [step0, {"expect": {"final": True}}]})))
    assert [r.id for r in plan.requests] == ["c:t0:s0:h0"]
    assert [(s.step, s.reason) for s in plan.skipped] == [
        (1, "not replayable: step 0 of path 'p' recorded its tool output but not the call's arguments (call_args)")
    ]
    assert "EXP-" not in plan.requests[0].to_openai().__repr__()


def test_histories_equal_up_to_key_order_are_one_request() -> None:
    def path(pid: str, call_args: dict, tail: str) -> dict:
        step0 = {
            "expect": {"tool": "search", "args": {"a": 1, "b": 2}},
            "observation": {"content": "out", "evidence": "recorded", "call_args": call_args},
        }
        return {
            "id": pid,
            "preferred": pid == "x",
            "steps": [step0, {"expect": {"final": True, "contains_any": [tail]}}],
        }

    raw = _one_turn(path("x", {"a": 1, "b": 2}, "yes"), path("y", {"b": 2, "a": 1}, "ok"))
    plan = project(parse_case(raw))
    assert [r.id for r in plan.requests] == ["c:t0:s0:h0", "c:t0:s1:h0"]
    assert [o.path_id for o in plan.expected["c:t0:s1:h0"]] == ["x", "y"]
    call = plan.requests[1].to_openai()["messages"][1]["tool_calls"][0]["function"]
    assert call["arguments"] == '{"a": 1, "b": 2}'
    # The same case with path y's arguments written first: byte-identical plan.
    swapped = copy.deepcopy(raw)
    for p in swapped["turns"][0]["paths"]:
        p["steps"][0]["observation"]["call_args"] = {"b": 2, "a": 1}
    assert project(parse_case(swapped)).to_json() == plan.to_json()
