"""Alternatives are oracles for one trial: one agent call per request, any-of scoring."""

from __future__ import annotations

import asyncio
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_case_strategies import replay_cases
from replay_oracle_answers import AcceptingJudge, decision_for

from mimesis_pl.eval import JudgeFailure, RetryPolicy
from mimesis_pl.eval.replay import (
    AgentDecision,
    ReplayExecutor,
    ReplayScorer,
    ScriptedAgent,
    parse_case,
    project,
)

CASE = {
    "id": "alt",
    "tools": [{"name": "search_flights"}, {"name": "ask_user"}],
    "turns": [
        {
            "user": "Paris on Friday",
            "paths": [
                {
                    "id": "A",
                    "preferred": True,
                    "steps": [{"expect": {"tool": "search_flights", "args": {"to": "CDG"}}}],
                },
                {
                    "id": "B",
                    "steps": [
                        {"expect": {"tool": "ask_user", "args_any": {"question": ["Which airport?", "CDG or ORY?"]}}}
                    ],
                },
            ],
        }
    ],
}


def test_agent_answering_with_the_alternative_passes_with_one_call_per_request() -> None:
    plan = project(parse_case(CASE))
    agent = ScriptedAgent(lambda request: AgentDecision.call("ask_user", {"question": "CDG or ORY?"}))
    run = asyncio.run(ReplayExecutor(agent).run([plan]))
    (record,) = run.records
    assert record.passed is True and record.matched == ("B",) and record.preferred_path == "A"
    assert [r.passed for r in record.oracle_results] == [False, True]
    assert agent.call_counts() == {"alt:t0:s0:h0": 1} and record.agent_calls == 1


def test_one_trial_is_not_retried_until_it_hits_some_path() -> None:
    # A "hidden pass@k" harness would ask again per alternative; this agent would then pass on its
    # second answer. Asked once, its one wrong answer fails.
    answers = iter(
        [
            AgentDecision.call("search_flights", {"to": "ORY"}),
            AgentDecision.call("ask_user", {"question": "Which airport?"}),
        ]
    )
    agent = ScriptedAgent(lambda request: next(answers))
    run = asyncio.run(ReplayExecutor(agent).run([project(parse_case(CASE))]))
    assert run.records[0].passed is False
    assert len(agent.calls) == 1
    assert run.records[0].oracle_results[0].reasons == ('argument \'to\' is "ORY", expected "CDG"',)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replay_cases(), st.randoms(use_true_random=False))
def test_any_oracle_answer_passes_every_request_with_exactly_one_call(model, rnd: random.Random) -> None:
    plan = project(parse_case(model.raw))
    chosen = {rid: rnd.choice(oracles) for rid, oracles in plan.expected.items()}
    agent = ScriptedAgent(lambda request: decision_for(chosen[request.id]))
    run = asyncio.run(ReplayExecutor(agent, scorer=ReplayScorer(judge=AcceptingJudge())).run([plan]))
    assert all(count == 1 for count in agent.call_counts().values())
    assert sorted(agent.calls) == sorted(r.id for r in plan.requests)
    for record in run.records:
        assert record.passed is True, (record.request_id, record.oracle_results)
        assert chosen[record.request_id].path_id in record.matched


def _score(expect_raw, decision, judge=None):
    raw = {
        "id": "s",
        "tools": [{"name": "f"}],
        "turns": [{"user": "u", "paths": [{"id": "p", "steps": [{"expect": expect_raw}]}]}],
    }
    plan = project(parse_case(raw))
    (request,) = plan.requests
    return asyncio.run(
        ReplayScorer(judge=judge, judge_retry=RetryPolicy(max_attempts=2, backoff_s=0)).score(
            request, plan.expected[request.id], decision
        )
    )


def test_argument_matching_rules() -> None:
    expect = {
        "tool": "f",
        "args": {"n": 2, "flag": True, "obj": {"a": [1, "x"]}},
        "args_any": {"d": ["Fri", "2026-03-06"]},
    }
    ok = {"n": 2.0, "flag": True, "obj": {"a": [1.0, "x"]}, "d": "2026-03-06"}
    assert _score(expect, AgentDecision.call("f", ok)).passed is True
    assert _score(expect, AgentDecision.call("f", {**ok, "flag": 1})).passed is False  # bool is not a number
    assert _score(expect, AgentDecision.call("f", {**ok, "n": "2"})).passed is False  # string is not a number
    assert _score(expect, AgentDecision.call("f", {**ok, "d": "fri"})).passed is False  # values are exact
    extra = _score(expect, AgentDecision.call("f", {**ok, "z": 0}))
    assert extra.passed is False and "unexpected argument(s) ['z']" in extra.results[0].reasons[0]
    assert _score({**expect, "allow_extra_args": True}, AgentDecision.call("f", {**ok, "z": 0})).passed is True
    missing = _score(expect, AgentDecision.call("f", {k: v for k, v in ok.items() if k != "d"}))
    assert missing.results[0].reasons == ('argument \'d\' missing (expected one of ["Fri","2026-03-06"])',)
    two = _score(expect, AgentDecision(tool_calls=AgentDecision.call("f", ok).tool_calls * 2))
    assert two.passed is False and "exactly one call" in two.results[0].reasons[0]
    text = _score(expect, AgentDecision.final("sure"))
    assert text.results[0].reasons == ("replied with text instead of calling 'f'",)
    broken = _score(expect, AgentDecision(parse_error="tool call 0: body is not JSON"))
    assert broken.passed is False and "could not be parsed" in broken.results[0].reasons[0]


def test_final_reply_matching_is_case_and_space_insensitive() -> None:
    expect = {"final": True, "contains_any": ["Which  airport"], "contains_all": ["Paris", "friday"]}
    assert _score(expect, AgentDecision.final("For PARIS on Friday — which\nairport?")).passed is True
    lacking = _score(expect, AgentDecision.final("Which airport in Paris?"))
    assert lacking.passed is False and lacking.results[0].reasons == ("reply lacks ['friday'] (contains_all)",)
    assert _score(expect, AgentDecision.call("f", {})).results[0].reasons == ("called tool 'f' instead of replying",)
    assert _score({"final": True}, AgentDecision.final("anything")).passed is True


def test_judge_rubrics_are_graded_once_per_request_and_failures_are_unscored() -> None:
    expect = {"final": True, "judge": "mentions May"}
    assert _score(expect, AgentDecision.final("opens in May")).passed is None  # no judge: unscored
    judge = AcceptingJudge()
    assert _score(expect, AgentDecision.final("opens in May"), judge=judge).passed is True
    assert judge.calls == [("s:t0:s0:h0", ("mentions May",))]

    class Broken:
        calls = 0

        async def grade(self, request, reply, rubrics):
            Broken.calls += 1
            raise JudgeFailure("judge endpoint returned 502")

    score = _score(expect, AgentDecision.final("opens in May"), judge=Broken())
    assert score.passed is None and Broken.calls == 2
    assert "judge failed after 2 attempt(s): JudgeFailure: judge endpoint returned 502" in score.results[0].reasons[0]
    # A phrase criterion that fails is a plain failure: the judge is not asked.
    both = {"final": True, "contains_any": ["May"], "judge": "mentions May"}
    assert _score(both, AgentDecision.final("in June"), judge=Broken()).passed is False
