"""SOUL: the simulator under test runs the validation rows of the 27 SOUL sets
through the simulator-RL tasks, in validation mode, once per seed.

Every row goes through :func:`mimesis_pl.tasks.runner.run_row` (the task registered for its
``data_source``, the same code as training's validation): n = 1, no format gate, the reward the task
reports (its ungated ``score``). The simulator samples as the reference's evaluation does (S72):
temperature 1.0, top-p 1.0, and every request of a seed's run carries that seed, so the three seeds
measure the simulator's own spread as well as the partners' and judges' (which are never seeded);
``simulator.temperature: 0`` is greedy. The simulator may be a local engine, a served model, or a served
chat model (S73).

Each row × seed is one cached item keyed by the simulator and its revision, what determines each
counterpart's answers (model, endpoint URL, explicit revision: S75), the suite version, the set, the row
index and seed, a hash of the row's content (E10) and of the sampling settings. Rows a task could not
score (``judge_failed``, ``task_error``, ``no_turns``) are retried, then stored unscored and counted per
set — never a 0; so is a row whose partner or support agent failed (S75): it is never stored or reused
as scored. A set that was run but has no scored row stops the report (no headline) unless
``allow_unscored_sets`` (S76). Scoring (per-set × 100, axes, the headline of docs/decisions.md S23, the
degenerate-seed rule) is :mod:`.soul_scoring`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from mimesis_pl.eval.agent_backend import AgentBackend, EngineAgentSettings
from mimesis_pl.eval.simulator.base import FidelitySuite, SuiteContext, SuiteReport
from mimesis_pl.eval.simulator.charts import bar_chart
from mimesis_pl.eval.simulator.models import sampling_identity
from mimesis_pl.eval.simulator.soul.data import SOUL as PUBLISHED
from mimesis_pl.eval.simulator.soul.data import SoulRow, soul_sets
from mimesis_pl.eval.simulator.soul.report import (
    HEADLINE,
    PAPER_OVERALL,
    ROW_WEIGHTED,
    describe_unscored,
    sets_without_score,
    soul_markdown,
)
from mimesis_pl.eval.simulator.soul.scoring import (
    across_seeds,
    degenerate_seeds,
    headline_value,
    seed_summary,
)
from mimesis_pl.eval.simulator.suite import item_ref, run_items
from mimesis_pl.eval.trials import RunIdentity, TaskRef, TrialOutcome, config_hash
from mimesis_pl.failures import EnvironmentFailure, InfrastructureFailure, JudgeFailure, SimulatorFailure
from mimesis_pl.llm import ChatModelSettings
from mimesis_pl.llm.served import key_for_listing, role_revision
from mimesis_pl.tasks.base import TaskContext
from mimesis_pl.tasks.clients import RoleSettings
from mimesis_pl.tasks.conversation import Policy
from mimesis_pl.tasks.registry import SOUL_AXIS_ORDER, import_tasks
from mimesis_pl.tasks.roles import build_roles
from mimesis_pl.tasks.runner import run_row
from mimesis_pl.tasks.transcripts import write_transcript

#: seed → data_source → one value per scored row
PerSeed = dict[int, dict[str, list[float]]]


class TaskErrorFailure(EnvironmentFailure):
    """The task raised for the row (``task_error``: a malformed row, a partner that is down, a deadline)."""


class NoTurnsFailure(SimulatorFailure):
    """The simulator produced no turn the task could score (``no_turns``)."""


#: task status → the failure it is retried and stored as; and the stored failure kind → the status counted.
STATUS_FAILURE: dict[str, type[InfrastructureFailure]] = {
    "judge_failed": JudgeFailure,
    "task_error": TaskErrorFailure,
    "no_turns": NoTurnsFailure,
}
FAILURE_STATUS = {"judge": "judge_failed", "environment": "task_error", "simulator": "no_turns", "timeout": "timeout"}


def task_row(row: SoulRow) -> dict[str, Any]:
    """The row as the simulator-RL tasks read it."""
    return {"data_source": row.data_source, "prompt": [dict(m) for m in row.prompt], "extra_info": dict(row.extra_info)}


def endpoint_identity(settings: ChatModelSettings, revision: str | None = None) -> str:
    """What determines a role's answers, for the cache key (S75): kind and model, and for a served role the
    endpoint URL and its revision: ``revision`` when given (``role_revisions``), else what the server reports
    it serves, else the role's ``revision`` setting (E25; a scripted role: its failure rate)."""
    if not settings.served:
        return f"scripted:{settings.model}" + (f"@fail{settings.failure_rate:g}" if settings.failure_rate else "")
    revision = revision or role_revision(
        settings.revision, settings.url, settings.model, key_for_listing(settings.api_key_env)
    )
    named = f"#{revision}" if revision != "unversioned" else ""  # as before E25 when nothing names one
    return f"{settings.kind}:{settings.model}@{settings.url}{named}"


def roles_identity(roles: RoleSettings, revisions: Mapping[str, str] | None = None) -> dict[str, str]:
    revisions = revisions or {}
    return {name: endpoint_identity(getattr(roles, name), revisions.get(name)) for name in vars(roles)}


@dataclass
class SoulSimulatorSettings(EngineAgentSettings):
    """The simulator under test (the agent settings, with the reference's evaluation sampling: S72).

    ``temperature`` 1.0 and ``top_p`` 1.0 are verl's rollout defaults, which the reference's SOUL runs use;
    ``0`` is greedy. ``engine`` may be a local engine (HF, vLLM, SGLang), a served model token-in/token-out
    (``OpenAIEngineSettings``) or a served chat model
    (:class:`~mimesis_pl.eval.simulator.chat_engine.ChatCompletionsEngineSettings`, S73); a served one needs
    ``revision``.
    """

    temperature: float = 1.0
    role: ClassVar[str] = "simulator"


def role_sampling(settings: ChatModelSettings) -> dict[str, Any]:
    """Every request field a role sends, for the settings hash: ``enable_thinking`` and ``extra_body`` only when
    set, so keys written before they joined (E26) still match a role that sets neither."""
    identity = sampling_identity(settings)
    return {k: v for k, v in identity.items() if k not in ("enable_thinking", "extra_body") or v not in (None, {})}


def _engine_sampling(engine: Any) -> dict[str, Any]:
    """The engine settings that change the simulator's replies (a served chat model's request fields)."""
    fields = ("send_sampling", "enable_thinking", "reasoning_effort", "extra_body")
    return {"kind": type(engine).__name__, **{k: getattr(engine, k) for k in fields if hasattr(engine, k)}}


class SoulSuite(FidelitySuite):
    """SOUL through the simulator-RL tasks, validation mode, one run per seed.

    Args:
        simulator: the simulator under test (an engine on ``model_path``: HF, vLLM, SGLang, or a served model
            token-in/token-out; reference budgets 8,192 prompt + 8,192 response tokens, 16,384
            with thinking). ``temperature: 0`` = greedy; ``revision`` (default: a hash of the model
            folder) is part of every cache key.
        roles: the judge, partner and support agent of the tasks (``scripted`` or ``openai``).
        seeds: one full run per seed (reference: 0, 1, 2).
        enable_thinking: thinking for tasks that follow the global setting (single-turn QA always thinks).
        min_think_tokens: passed to the tasks (the gate itself is off in validation).
        task_options: per data_source task settings, as in ``SimulatorRL``.
        row_timeout_s: deadline per row; past it the row is a ``task_error``.
        dump_transcripts: write ``<out_dir>/conversations/seed<N>/<data_source>-<index>.json`` for every row
            run (rows reused from the cache keep the file of the run that made them).
        degenerate_min_zero_sets, degenerate_gap: the degenerate-seed rule (≥ 8 sets at 0.0 and Overall more
            than 15 points below the median).
        role_revisions: an explicit revision per served role (``judge``, ``partner``, ``support_agent``), part of
            the cache key with its endpoint URL (S75): name it when a new model is served at the same URL.
        allow_unscored_sets: report the headline even when a set that was run has no scored row in a kept seed
            (marked in the report); by default that is an error, so a headline never silently covers fewer sets.
        tasks: tasks of your own package, by import path (``my_pkg.tasks:SPECS``, as ``SimulatorRL``'s); a spec
            with a ``soul_axis`` is a SOUL set of that axis, reported under its ``name`` (docs/extending.md). Its
            axis and the SOUL-Index are then not comparable with the paper's.
    """

    name = "soul"
    version = "2"

    def __init__(
        self,
        simulator: SoulSimulatorSettings,
        roles: RoleSettings | None = None,
        role_revisions: dict[str, str] | None = None,
        seeds: list[int] | None = None,
        enable_thinking: bool = True,
        min_think_tokens: int = 4,
        task_options: dict[str, dict[str, Any]] | None = None,
        row_timeout_s: float | None = 1800.0,
        degenerate_min_zero_sets: int = 8,
        degenerate_gap: float = 15.0,
        dump_transcripts: bool = True,
        allow_unscored_sets: bool = False,
        tasks: list[str] | None = None,
    ) -> None:
        for path in tasks or ():
            import_tasks(path, key="model.init_args.suite.init_args.tasks")
        self.simulator = simulator
        self.roles = roles or RoleSettings()
        self.role_revisions = dict(role_revisions or {})
        unknown = sorted(set(self.role_revisions) - set(vars(self.roles)))
        if unknown:
            raise ValueError(f"role_revisions: unknown role(s) {unknown}; roles are {sorted(vars(self.roles))}")
        self.allow_unscored_sets = allow_unscored_sets
        self.seeds = [0, 1, 2] if seeds is None else list(seeds)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")
        if not isinstance(simulator, EngineAgentSettings):
            raise TypeError(
                "the simulator must run the tasks through an engine (SoulSimulatorSettings); for a served model "
                "use engine OpenAIEngineSettings (/v1/completions) or ChatCompletionsEngineSettings "
                "(/v1/chat/completions), with model_path's tokenizer"
            )
        self.enable_thinking, self.min_think_tokens = enable_thinking, min_think_tokens
        self.task_options = dict(task_options or {})
        self.row_timeout_s = row_timeout_s
        self.degenerate_min_zero_sets, self.degenerate_gap = degenerate_min_zero_sets, degenerate_gap
        self.dump_transcripts = dump_transcripts
        self._backend: AgentBackend | None = None
        self._contexts: dict[int, TaskContext] = {}
        self._records: dict[tuple[int, str, int], Any] = {}

    def start(self) -> None:
        self._backend = AgentBackend(self.simulator)
        judge, partner, support_agent = build_roles(self.roles)
        sampling = self._backend.sampling()
        self._contexts = {
            seed: TaskContext(
                policy=Policy(
                    self._backend.engine,
                    self._backend.tokenizer,
                    replace(sampling, seed=seed),
                    max_length=self.simulator.max_length,
                ),
                judge=judge,
                partner=partner,
                support_agent=support_agent,
                is_train=False,
                min_think_tokens=self.min_think_tokens,
                enable_think=self.enable_thinking,
                options=self.task_options,
            )
            for seed in self.seeds
        }
        self._records = {}

    def identity(self) -> RunIdentity:
        assert self._backend is not None
        partners = ";".join(f"{k}={v}" for k, v in sorted(roles_identity(self.roles, self.role_revisions).items()))
        return RunIdentity(
            model_under_test=self._backend.name,
            model_revision=self._backend.revision,
            partner=partners,
            harness_version=f"{self.name}-v{self.version}",
        )

    def settings_hash(self) -> str:
        s = self.simulator
        return config_hash(
            {
                "temperature": s.temperature,
                "top_p": s.top_p,
                "engine": _engine_sampling(s.engine),
                "max_new_tokens": s.max_new_tokens,
                "max_length": s.max_length,
                "enable_thinking": self.enable_thinking,
                "min_think_tokens": self.min_think_tokens,
                "task_options": self.task_options,
                "roles": {role: role_sampling(e) for role, e in vars(self.roles).items()},
            }
        )  # endpoints, timeouts: not identity

    async def run_batch(self, batch: list[SoulRow], ctx: SuiteContext) -> None:
        async def one(ref: TaskRef, _: int) -> TrialOutcome:
            row, seed = ref.payload
            task = task_row(row)
            result = await run_row(task, self._contexts[seed], ref.task_id, ref.task_id, self.row_timeout_s)
            if self.dump_transcripts:
                write_transcript(
                    ctx.out_dir / "conversations" / f"seed{seed}",
                    task,
                    result,
                    experiment_name=f"{self._backend.name}-seed{seed}",
                    global_step=0,
                )
            if result.status in STATUS_FAILURE:
                raise STATUS_FAILURE[result.status](
                    f"{row.data_source}#{row.index} seed {seed}: {result.status}: {result.error or 'no verdict'}"
                )
            return TrialOutcome(
                reward=float(result.score),
                info={
                    "data_source": row.data_source,
                    "index": row.index,
                    "seed": seed,
                    "status": result.status,
                    "metrics": {k: float(v) for k, v in result.metrics.items()},
                },
            )

        settings = self.settings_hash()
        refs = [
            item_ref(
                f"soul/{row.data_source}",
                f"{row.data_source}#{row.index}",
                seed,
                settings,
                (row, seed),
                content=task_row(row),
            )
            for seed in self.seeds
            for row in batch
        ]
        self._backend.engine.wake_up()
        try:
            run = await run_items(refs, self.identity(), one, ctx.cache, ctx.retry, ctx.max_concurrency)
        finally:
            self._backend.engine.sleep()
        ctx.count(run)
        for ref in refs:
            row, seed = ref.payload
            self._records[(seed, row.data_source, row.index)] = run.records[ref.task_id]

    def _scores(self) -> tuple[PerSeed, PerSeed, dict[int, dict[str, Counter]]]:
        """Per seed and set: the scored rows' task scores, their ``all/score`` (:func:`headline_value`) and the
        unscored rows' failures."""
        scores: PerSeed = {s: defaultdict(list) for s in self.seeds}
        headline: PerSeed = {s: defaultdict(list) for s in self.seeds}
        failed: dict[int, dict[str, Counter]] = {s: defaultdict(Counter) for s in self.seeds}
        for (seed, source, _), record in sorted(self._records.items()):
            if record.status == "scored":
                scores[seed][source].append(float(record.reward))
                metrics = record.info.get("metrics", {})
                headline[seed][source].append(headline_value(source, float(record.reward), metrics))
            else:
                failed[seed][source][FAILURE_STATUS.get(record.failure or "", record.failure or "unknown")] += 1
        return scores, headline, failed

    def report(self, ctx: SuiteContext) -> SuiteReport:
        scores, headline, failed = self._scores()
        if not any(scores[s] for s in self.seeds):
            n = sum(sum(c.values()) for per in failed.values() for c in per.values())
            raise RuntimeError(f"SOUL: no row could be scored ({n} rows unscored); no summary written")
        sets = sorted({src for _, src, _ in self._records}, key=soul_sets().index)
        per_seed = {
            seed: seed_summary(
                {src: scores[seed].get(src, []) for src in sets}, {src: headline[seed].get(src, []) for src in sets}
            )
            for seed in self.seeds
        }
        dropped = degenerate_seeds(per_seed, self.degenerate_min_zero_sets, self.degenerate_gap)
        unscored_sets = sets_without_score(per_seed, dropped)
        if unscored_sets and not self.allow_unscored_sets:
            raise RuntimeError(
                f"SOUL: set(s) with no scored row: {describe_unscored(unscored_sets, failed)}; no headline written "
                "(a headline over the sets that happen to score is not the SOUL-Index; fix the rows or the "
                "counterparts, or set allow_unscored_sets: true to report it anyway, marked)"
            )
        summary = across_seeds(per_seed, dropped)
        failures = {seed: {src: dict(c) for src, c in per.items()} for seed, per in failed.items()}
        totals = Counter()
        for per in failed.values():
            for c in per.values():
                totals.update(c)
        results = {
            "suite": self.name,
            "version": self.version,
            "simulator": self._backend.name,
            "simulator_revision": self._backend.revision,
            "sampling": {"temperature": self.simulator.temperature, "top_p": self.simulator.top_p},
            "roles": roles_identity(self.roles, self.role_revisions),
            "seeds": self.seeds,
            "sets": sets,
            "sets_missing": [s for s in soul_sets() if s not in sets],
            "sets_without_score": {str(k): v for k, v in unscored_sets.items()},
            "rows_per_set": {src: len({i for (_, s, i) in self._records if s == src}) for src in sets},
            "headline": {"name": HEADLINE, **summary["soul_index"]},
            "paper_overall": {"name": PAPER_OVERALL, **summary["overall"]},
            "row_weighted_task_scores": {"name": ROW_WEIGHTED, **summary["overall_row_weighted"]},
            "summary": summary,
            "per_seed": per_seed,
            "dropped_seeds": {str(k): v for k, v in dropped.items()},
            "unscored": dict(totals),
            "unscored_by_seed": failures,
            "published": {m: dict(zip((*SOUL_AXIS_ORDER, "Overall"), v)) for m, v in PUBLISHED.items()},
        }
        scalars = {f"soul/{src}": float(v["mean"]) for src, v in summary["datasets"].items() if v["mean"] is not None}
        scalars.update(
            {f"soul/axis/{a}": float(v["mean"]) for a, v in summary["axes"].items() if v["mean"] is not None}
        )
        for key in ("soul_index", "overall", "overall_row_weighted"):
            if summary[key]["mean"] is not None:
                scalars[f"soul/{key}"] = float(summary[key]["mean"])
        scalars.update({f"soul/unscored/{k}": float(v) for k, v in totals.items()})
        return SuiteReport(results, soul_markdown(results), scalars)

    def chart(self, report: SuiteReport, path: Path) -> Path | None:
        r = report.results
        series = {f"seed {s}": [r["per_seed"][s]["axes"][a] for a in SOUL_AXIS_ORDER] for s in r["seeds"]}
        series["MIMESIS-9B (paper)"] = [r["published"]["MIMESIS-9B"][a] for a in SOUL_AXIS_ORDER]
        return bar_chart(
            path,
            list(SOUL_AXIS_ORDER),
            series,
            ylabel="score (× 100)",
            ylim=(0.0, 100.0),
            title=f"SOUL axes — {r['simulator']} (missing axes drawn as 0)",
        )

    async def aclose(self) -> None:
        closed = set()
        for ctx in self._contexts.values():
            for client in (ctx.judge, ctx.partner, ctx.support_agent):
                if id(client) not in closed and hasattr(client, "aclose"):
                    closed.add(id(client))
                    await client.aclose()
        if self._backend is not None and self._backend.engine is not None:
            if hasattr(self._backend.engine, "aclose"):
                await self._backend.engine.aclose()
            self._backend.engine.close()
        self._contexts = {}
