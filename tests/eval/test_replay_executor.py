"""ReplayExecutor: artifacts per request, fixture provenance, infrastructure failures, sample cases."""

from __future__ import annotations

import asyncio
import json

import pytest
from replay_oracle_answers import AcceptingJudge, decision_for

from mimesis_pl.chat.tool_calls import format_tool_call
from mimesis_pl.eval import AgentTransportFailure, RetryPolicy
from mimesis_pl.eval.replay import (
    AgentDecision,
    ReplayExecutor,
    ReplayScorer,
    ScriptedAgent,
    decision_from_text,
    load_cases,
    parse_case,
    project,
    read_replay_records,
    rescore,
    run_replay,
)


def _preferred_agent(plans):
    """Answers every request with its preferred oracle (or the first one)."""
    table = {}
    for plan in plans:
        for rid, oracles in plan.expected.items():
            table[rid] = decision_for(next((o for o in oracles if o.preferred), oracles[0]))
    return ScriptedAgent(table)


def test_sample_cases_pass_with_preferred_answers_and_write_artifacts(tmp_path) -> None:
    plans = [project(c) for c in load_cases("assets/replay")]
    agent = _preferred_agent(plans)
    out = tmp_path / "replay.jsonl"
    run = asyncio.run(ReplayExecutor(agent, scorer=ReplayScorer(judge=AcceptingJudge())).run(plans, artifacts=out))
    assert all(r.passed is True for r in run.records)
    assert all(n == 1 for n in agent.call_counts().values()) and len(agent.calls) == len(run.records)
    summary = run.summary()
    assert summary.requests == sum(len(p.requests) for p in plans) and summary.pass_rate == 1.0
    assert summary.skipped_steps == 3 and summary.per_case["support-005"]["skipped"] == 2

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    requests = [r for r in rows if r["record"] == "request"]
    assert [r["request_id"] for r in requests] == [r.request_id for r in run.records]
    assert {r["record"] for r in rows} == {"request", "skipped"}
    turn1 = next(r for r in requests if r["request_id"] == "restaurant-004:t1:s0:h0")
    assert turn1["oracles"] == ["book", "confirm-date"] and turn1["preferred_path"] == "book"
    assert turn1["observations"] == [{"message_index": 3, "turn": 0, "step": 0, "source": "fixture"}]
    assert [h["kind"] for h in turn1["history"]] == ["call", "observation", "reply"]
    assert turn1["decision"]["tool_calls"][0]["name"] == "book_table"
    assert turn1["oracle_results"][0] == {"path_id": "book", "preferred": True, "passed": True, "reasons": []}

    records, skipped = read_replay_records(out)
    assert records == list(run.records) and skipped == list(run.skipped)


def test_without_judge_the_rubric_case_is_unscored_not_failed(tmp_path) -> None:
    plans = [project(c) for c in load_cases("assets/replay/summary_judge.yaml")]
    run = asyncio.run(ReplayExecutor(_preferred_agent(plans)).run(plans))
    assert [r.status for r in run.records] == ["scored", "unscored"]
    assert run.records[1].passed is None and run.records[1].failure == "unjudged"
    summary = run.summary()
    assert (summary.scored, summary.unscored, summary.pass_rate) == (1, 1, 1.0)


def test_transport_failures_are_retried_then_reported_unscored() -> None:
    plans = [project(c) for c in load_cases("assets/replay/weather.yaml", "assets/replay/trivia.yaml")]
    attempts: dict[str, int] = {}

    class Flaky:
        async def decide(self, request):
            attempts[request.id] = attempts.get(request.id, 0) + 1
            if request.case_id == "trivia-009":
                raise AgentTransportFailure("connection refused")
            if attempts[request.id] == 1:
                raise TimeoutError("slow server")
            return AgentDecision.call("get_weather", {"city": "Berlin", "units": "metric"})

    run = asyncio.run(ReplayExecutor(Flaky(), retry=RetryPolicy(max_attempts=3, backoff_s=0)).run(plans))
    weather, trivia = run.records
    assert (weather.status, weather.passed, weather.agent_calls) == ("scored", True, 2)
    assert (trivia.status, trivia.passed, trivia.agent_calls, trivia.failure) == (
        "unscored",
        None,
        3,
        "agent_transport",
    )
    assert trivia.error == "AgentTransportFailure: connection refused"
    assert run.summary().unscored_by_kind == {"agent_transport": 1}


def test_a_bug_in_the_agent_propagates() -> None:
    plans = [project(c) for c in load_cases("assets/replay/trivia.yaml")]
    with pytest.raises(KeyError, match="no decision for request 'trivia-009:t0:s0:h0'"):
        asyncio.run(ReplayExecutor(ScriptedAgent({})).run(plans))


def test_run_replay_loads_projects_and_executes(tmp_path) -> None:
    cases = load_cases("assets/replay/flights.yaml")
    agent = _preferred_agent([project(c) for c in cases])
    run = asyncio.run(run_replay(["assets/replay/flights.yaml"], agent, artifacts=tmp_path / "r.jsonl"))
    assert [r.passed for r in run.records] == [True, True]
    assert (tmp_path / "r.jsonl").exists()


def test_decisions_from_raw_text_use_the_package_tool_call_format() -> None:
    text = "<think>they want a lookup</think>" + format_tool_call("get_weather", {"city": "Berlin"})
    decision = decision_from_text(text)
    assert decision.reasoning == "they want a lookup"
    assert [(c.name, c.arguments) for c in decision.tool_calls] == [("get_weather", {"city": "Berlin"})]
    assert decision.raw == text and not decision.is_final
    final = decision_from_text("<think>x</think>It is sunny.")
    assert final.is_final and final.text == "It is sunny."
    broken = decision_from_text("<tool_call>{not json}</tool_call>")
    assert broken.parse_error and "not JSON" in broken.parse_error and not broken.is_final
    assert AgentDecision.from_dict(decision.to_dict()) == decision


def test_recorded_decisions_can_be_rescored_without_the_agent(tmp_path) -> None:
    raw = {
        "id": "r",
        "turns": [
            {
                "user": "colours?",
                "paths": [{"id": "p", "steps": [{"expect": {"final": True, "contains_any": ["purple"]}}]}],
            }
        ],
    }
    agent = ScriptedAgent(lambda request: AgentDecision.final("red, green and blue"))
    run = asyncio.run(ReplayExecutor(agent).run([project(parse_case(raw))], artifacts=tmp_path / "r.jsonl"))
    assert run.records[0].passed is False
    raw["turns"][0]["paths"][0]["steps"][0]["expect"]["contains_any"] = ["green"]  # the case was wrong
    records, _ = read_replay_records(tmp_path / "r.jsonl")
    again = asyncio.run(rescore(records, [project(parse_case(raw))]))
    assert again.records[0].passed is True and len(agent.calls) == 1
