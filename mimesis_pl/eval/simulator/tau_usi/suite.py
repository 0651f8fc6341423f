"""tau-USI suite: the simulator plays tau-bench customers against a fixed agent
that uses a tool runtime over HTTP; behavioural features, success and survey answers are compared with
each human annotation batch: D1–D4, ECE, USI₅ (USI₆ when the simulator answers the survey), mean ± population
std over batches (docs/decisions.md S70, S71).

One cached stage, ``tau_usi/rollout``, keyed by task and seed, the simulator, the agent and the runtime.
A rollout that keeps failing (simulator, agent transport, runtime) is unscored and counted, and its task
is left out of that run's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_pl.chat.tool_calls import ToolCallParseError, parse_tool_calls
from mimesis_pl.envs.gyms.tau.tool_runtime import HttpToolRuntime, ToolRuntime, serve_scripted_runtime
from mimesis_pl.eval.simulator.base import FidelitySuite, SuiteContext, SuiteReport
from mimesis_pl.eval.simulator.charts import bar_chart
from mimesis_pl.eval.simulator.models import ChatModelSettings, SuiteModel, build_chat_model, sampling_identity
from mimesis_pl.eval.simulator.suite import item_ref, run_items, suite_identity
from mimesis_pl.eval.simulator.tau_usi.data import (
    SURVEY_SCALES,
    TAU_USI,
    TAU_USI_HUMAN,
    TauTask,
    load_difficulty,
    load_human_batches,
)
from mimesis_pl.eval.simulator.tau_usi.features import STOP, conversation_features, report_row
from mimesis_pl.eval.simulator.tau_usi.report import batches_summary, tau_usi_markdown
from mimesis_pl.eval.simulator.tau_usi.scoring import RunTask, model_eval, score_batch
from mimesis_pl.eval.simulator.tau_usi.scripted import SURVEY_MARKER, scripted_tau_agent, scripted_tau_user
from mimesis_pl.eval.simulator.text import first_json_object, strip_reasoning
from mimesis_pl.eval.trials import TaskRef, TrialOutcome, config_hash
from mimesis_pl.eval.values import thaw
from mimesis_pl.failures import AgentTransportFailure, JudgeFailure, SimulatorFailure
from mimesis_pl.llm import ScriptedChatSettings

GREETING = "Hi! How can I help you today?"
SIM_RULES = (
    "You are a customer talking to a support agent. Write one line at a time, reveal information "
    "gradually and only when asked, never invent information the instruction does not give, paraphrase "
    f"instead of copying the instruction, keep the persona. Write {STOP} when your request is done or "
    "after a confirmed transfer to a human."
)


class RuntimeSettings:
    """The tool runtime (``runtime:``, chosen by ``class_path``): :class:`ScriptedHttpRuntimeSettings` (the
    default) or :class:`HttpRuntimeSettings`."""

    #: The runtime's name in ``results.json`` (``runtime``).
    label: str = ""

    def identity(self) -> str:
        """What the rollout cache key names for this runtime."""
        raise NotImplementedError

    async def build(self) -> tuple[ToolRuntime, Any]:
        """The runtime's client and the loopback server started for it (``None`` when the user serves it)."""
        raise NotImplementedError


@dataclass
class ScriptedHttpRuntimeSettings(RuntimeSettings):
    """Our scripted runtime, served on loopback.

    Args:
        timeout_s: per request.
    """

    timeout_s: float = 60.0

    label = "scripted_http"

    def identity(self) -> str:
        return "scripted"

    async def build(self) -> tuple[ToolRuntime, Any]:
        server, url = await serve_scripted_runtime()
        return HttpToolRuntime(url, timeout_s=self.timeout_s), server


@dataclass
class HttpRuntimeSettings(RuntimeSettings):
    """A tau-bench-compatible service at ``url``.

    Args:
        url: its address (part of every rollout's cache key).
        timeout_s: per request.
    """

    url: str | None = None
    timeout_s: float = 60.0

    label = "http"

    def __post_init__(self) -> None:
        if not self.url:
            raise ValueError("runtime.url is required for HttpRuntimeSettings")

    def identity(self) -> str:
        return str(self.url)

    async def build(self) -> tuple[ToolRuntime, Any]:
        return HttpToolRuntime(str(self.url), timeout_s=self.timeout_s), None


class TauUSISuite(FidelitySuite):
    """tau-USI.

    Args:
        human_file: ``tau_bench_tasks_unified.json`` (3 annotators → 3 batches; each entry's ``survey`` holds
            the human answers ``{field: {question, answer}}``).
        difficulty_file: the frozen difficulty map.
        survey: the simulator answers the survey (the real option strings) after each conversation, and Eval
            (against the human answers) gives USI₆ beside USI₅ (S71: the reference reads the model's
            answers from a separate file; a fresh run of the paper reports USI₅ only).
        simulator, agent: the simulator under test and the fixed agent.
        runtime: the tool runtime (default :class:`ScriptedHttpRuntimeSettings`).
        seeds: one run per seed (the model row averages the runs).
        max_user_turns, max_tool_rounds: per conversation and per user turn.
    """

    name = "tau_usi"
    version = "2"

    def __init__(
        self,
        human_file: str,
        difficulty_file: str,
        survey: bool = False,
        simulator: ChatModelSettings | None = None,
        agent: ChatModelSettings | None = None,
        runtime: RuntimeSettings | None = None,
        seeds: list[int] | None = None,
        max_user_turns: int = 80,
        max_tool_rounds: int = 64,
    ) -> None:
        self.human_file, self.difficulty_file, self.survey = human_file, difficulty_file, survey
        self.settings = {
            "simulator": simulator or ScriptedChatSettings(model="tau-user", temperature=0.7, max_tokens=2048),
            "agent": agent or ScriptedChatSettings(model="tau-agent", temperature=0.0, max_tokens=8192),
        }
        self.runtime_settings = runtime or ScriptedHttpRuntimeSettings()
        self.seeds = [0] if seeds is None else list(seeds)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")
        self.max_user_turns, self.max_tool_rounds = max_user_turns, max_tool_rounds
        self._models: dict[str, SuiteModel] = {}
        self._runtime: ToolRuntime | None = None
        self._server = None
        self._results: dict[int, dict[str, RunTask]] = {}
        self._failures: dict[str, int] = {}
        self._tasks = 0

    def start(self) -> None:
        self._human = load_human_batches(self.human_file)
        self._difficulty = load_difficulty(self.difficulty_file)
        s = self.settings
        self._models = {
            "simulator": build_chat_model(s["simulator"], "simulator", SimulatorFailure, scripted_tau_user),
            "agent": build_chat_model(s["agent"], "agent", AgentTransportFailure, scripted_tau_agent),
        }
        self._results, self._failures, self._tasks = {seed: {} for seed in self.seeds}, {}, 0

    async def _ensure_runtime(self) -> ToolRuntime:
        if self._runtime is None:
            self._runtime, self._server = await self.runtime_settings.build()
        return self._runtime

    async def rollout(self, task: TauTask, seed: int) -> TrialOutcome:
        runtime = await self._ensure_runtime()
        sim, ss = self._models["simulator"], self.settings["simulator"]
        session = await runtime.reset(task.env_name, task.task_index)
        sid = session["session_id"]
        agent_view = [
            {
                "role": "system",
                "content": f"{session.get('wiki', '')}\n\nTools: {session.get('tools')}. "
                'Call a tool with <tool_call>{"name": ..., "arguments": {...}}</tool_call>.',
            },
            {"role": "assistant", "content": GREETING},
        ]
        sim_view = [
            {"role": "system", "content": f"{SIM_RULES}\n\nInstruction: {task.instruction}"},
            {"role": "user", "content": GREETING},
        ]
        conversation, agent_texts, reason = [{"role": "assistant", "content": GREETING}], [GREETING], "max_turns"
        for _ in range(self.max_user_turns):
            said = strip_reasoning(
                await sim.complete(sim_view, temperature=ss.temperature, max_tokens=ss.max_tokens, seed=seed)
            )
            if not said:
                reason = "empty_user_turn"
                break
            sim_view.append({"role": "assistant", "content": said})
            if STOP in said:  # the stop turn is never appended to the conversation (as the reference)
                reason = "stop"
                break
            conversation.append({"role": "user", "content": said})
            agent_view.append({"role": "user", "content": said})
            answer = await self._agent_turn(runtime, sid, agent_view, seed)
            if answer is None:
                reason = "tool_rounds"
                break
            conversation.append({"role": "assistant", "content": answer})
            sim_view.append({"role": "user", "content": answer})
            agent_texts.append(answer)
        reward = await runtime.reward(sid, agent_texts)
        await runtime.close(sid)
        survey = await self._survey_answers(sim_view, seed) if self.survey else {}
        return TrialOutcome(
            reward=reward,
            info={
                "conversation": conversation,
                "termination_reason": reason,
                "survey": survey,
            },
        )

    async def _agent_turn(
        self, runtime: ToolRuntime, sid: str, agent_view: list[dict[str, str]], seed: int
    ) -> str | None:
        """Tool rounds until the agent writes to the user (its text), or None past ``max_tool_rounds``.
        Observations go back as ``system`` messages, as the reference."""
        settings = self.settings["agent"]
        for _ in range(self.max_tool_rounds):
            text = strip_reasoning(
                await self._models["agent"].complete(
                    agent_view, temperature=settings.temperature, max_tokens=settings.max_tokens, seed=seed
                )
            )
            try:
                calls, rest = parse_tool_calls(text)
            except ToolCallParseError:  # a malformed call is the agent's words, not an infrastructure failure
                calls, rest = [], text
            agent_view.append({"role": "assistant", "content": text})
            if not calls:
                return rest
            for call in calls:
                observation = await runtime.step(sid, call.name, call.arguments)
                agent_view.append({"role": "system", "content": f"Tool {call.name} returned: {observation}"})
        return None

    async def _survey_answers(self, sim_view: list[dict[str, str]], seed: int) -> dict[str, str]:
        fields = "; ".join(f"{name}: {' | '.join(options)}" for name, options in SURVEY_SCALES.items())
        ask = f"{SURVEY_MARKER} answer each question with one option, as one JSON object field -> option. {fields}"
        s = self.settings["simulator"]
        reply = await self._models["simulator"].complete(
            [*sim_view, {"role": "user", "content": ask}], temperature=s.temperature, max_tokens=s.max_tokens, seed=seed
        )
        try:
            answers = first_json_object(strip_reasoning(reply), "survey")
        except JudgeFailure:
            return {}  # "no answer" for every field: replaced at scoring, as the reference
        return {k: str(v) for k, v in answers.items() if k in SURVEY_SCALES}

    async def run_batch(self, batch: list[TauTask], ctx: SuiteContext) -> None:
        s, m = self.settings, self._models
        settings_hash = config_hash(
            {
                "simulator": sampling_identity(s["simulator"]),
                "agent": sampling_identity(s["agent"]),
                "survey": self.survey,
                "limits": [self.max_user_turns, self.max_tool_rounds],
            }
        )
        runtime_label = self.runtime_settings.identity()
        identity = suite_identity(
            self.name, self.version, m["simulator"], {"agent": m["agent"], "runtime": _Named(runtime_label)}
        )
        refs = [
            item_ref("tau_usi/rollout", task.instance_id, seed, settings_hash, (task, seed), content=task)
            for seed in self.seeds
            for task in batch
        ]
        await self._ensure_runtime()  # once, before rollouts run concurrently

        async def one(ref: TaskRef, _: int) -> TrialOutcome:
            return await self.rollout(*ref.payload)

        run = await run_items(refs, identity, one, ctx.cache, ctx.retry, ctx.max_concurrency)
        ctx.count(run)
        self._tasks += len(batch)
        for ref in refs:
            task, seed = ref.payload
            record = run.records[ref.task_id]
            if record.status != "scored":
                self._failures[record.failure or "unknown"] = self._failures.get(record.failure or "unknown", 0) + 1
                continue
            self._results[seed][task.instance_id] = RunTask(
                # Features are computed from the stored conversation at scoring time, so a cached rollout is
                # always measured with the current extractor (S70).
                features=conversation_features(thaw(record.info["conversation"])),
                reward=float(record.reward),
                survey=thaw(record.info["survey"]),
            )

    def report(self, ctx: SuiteContext) -> SuiteReport:
        if not any(self._results.values()):
            raise RuntimeError(f"tau-USI: no rollout could be scored ({self._failures}); no summary written")
        evaluation = model_eval(self._human, self._results) if self.survey else None
        eval_mean = None if evaluation is None else evaluation["mean"]
        batches = {
            b: score_batch(human, self._results, self._difficulty, eval_mean) for b, human in self._human.items()
        }
        for b, v in batches.items():
            v["eval_batch"] = None if evaluation is None else evaluation["batches"].get(b)
        summary = batches_summary(batches, evaluation)
        results = {
            "suite": self.name,
            "version": self.version,
            "models": {role: {"name": mm.name, "revision": mm.revision} for role, mm in self._models.items()},
            "runtime": self.runtime_settings.label,
            "seeds": self.seeds,
            "tasks": self._tasks,
            "rollouts_scored": sum(len(r) for r in self._results.values()),
            "rollouts_unscored": sum(self._failures.values()),
            "unscored_by_kind": dict(self._failures),
            "summary": summary,
            "batches": {str(b): {k: v for k, v in s.items() if not k.endswith("_row")} for b, s in batches.items()},
            "rows": {
                str(b): {"human": report_row(s["human_row"]), "model": report_row(s["model_row"])}
                for b, s in batches.items()
                if s["tasks"]
            },
            "published": {"usi5": TAU_USI, "human_inter_annotator_usi5": TAU_USI_HUMAN},
        }
        scalars = {f"tau_usi/{k}": float(v["mean"]) for k, v in summary.items() if v["mean"] is not None}
        scalars["tau_usi/rollouts_unscored"] = float(results["rollouts_unscored"])
        return SuiteReport(results, tau_usi_markdown(results), scalars)

    def chart(self, report: SuiteReport, path: Path) -> Path | None:
        batches = report.results["batches"]
        labels = ["D1", "D2", "D3", "D4", "100(1-ECE)", "USI5"]
        series = {
            f"batch {b}": [
                v.get("D1"),
                v.get("D2"),
                v.get("D3"),
                v.get("D4"),
                None if v.get("ece") is None else 100 * (1 - v["ece"]),
                v.get("usi5"),
            ]
            for b, v in batches.items()
        }
        return bar_chart(
            path,
            labels,
            series,
            ylabel="score",
            ylim=(0, 100),
            title=f"tau-USI — {report.results['models']['simulator']['name']}",
        )

    async def aclose(self) -> None:
        await super().aclose()
        if self._runtime is not None:
            await self._runtime.aclose()
            self._runtime = None
        if self._server is not None:
            await self._server.cleanup()
            self._server = None


@dataclass(frozen=True)
class _Named:
    name: str
    revision: str = "-"
