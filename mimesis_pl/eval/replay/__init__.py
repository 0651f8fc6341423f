"""Replay with teacher forcing: cases -> immutable plans -> one agent call per request -> any-of scoring.

Typical use::

    plans = [project(case) for case in load_cases("assets/replay")]
    run = await ReplayExecutor(OpenAIChatAgent(base_url, model)).run(plans, artifacts="out/replay.jsonl")
    print(run.summary().to_dict())
"""

from mimesis_pl.eval.replay.agent import AgentDecision, ChatAgent, ScriptedAgent, decision_from_text
from mimesis_pl.eval.replay.case import (
    Expectation,
    FinalExpectation,
    Observation,
    Path,
    ReplayCase,
    Step,
    ToolExpectation,
    Turn,
)
from mimesis_pl.eval.replay.engine_agent import EngineChatAgent
from mimesis_pl.eval.replay.executor import ReplayExecutor, ReplayRun, rescore, run_replay
from mimesis_pl.eval.replay.load import load_cases, read_case_file
from mimesis_pl.eval.replay.openai_agent import OpenAIChatAgent, decision_from_message, request_messages
from mimesis_pl.eval.replay.plan import ExecutionPlan, HistoryEntry, Oracle, ReplayRequest, SkippedStep, project
from mimesis_pl.eval.replay.records import (
    ReplayRecord,
    ReplaySummary,
    read_replay_records,
    summarize_replay,
    write_replay_records,
)
from mimesis_pl.eval.replay.scorer import OracleResult, ReplayJudge, ReplayScorer, RequestScore
from mimesis_pl.eval.replay.validate import CaseFormatError, parse_case

__all__ = [
    "AgentDecision",
    "CaseFormatError",
    "ChatAgent",
    "EngineChatAgent",
    "ExecutionPlan",
    "Expectation",
    "FinalExpectation",
    "HistoryEntry",
    "ReplayJudge",
    "Observation",
    "OpenAIChatAgent",
    "Oracle",
    "OracleResult",
    "Path",
    "ReplayCase",
    "ReplayExecutor",
    "ReplayRecord",
    "ReplayRequest",
    "ReplayRun",
    "ReplayScorer",
    "ReplaySummary",
    "RequestScore",
    "ScriptedAgent",
    "SkippedStep",
    "Step",
    "ToolExpectation",
    "Turn",
    "decision_from_message",
    "decision_from_text",
    "load_cases",
    "parse_case",
    "project",
    "read_case_file",
    "read_replay_records",
    "request_messages",
    "rescore",
    "run_replay",
    "summarize_replay",
    "write_replay_records",
]


def __getattr__(name: str):
    from mimesis_pl.moved import moved_attribute

    return moved_attribute(__name__, name)
