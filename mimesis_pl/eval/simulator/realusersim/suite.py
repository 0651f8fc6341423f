"""RealUserSim PT3 suite: three conditions, conversations with a fixed assistant,
two-call judging of five fidelity dimensions, the Fidelity Index with a user-clustered bootstrap CI.

Two cached stages: ``realusersim/converse`` (simulator + assistant, keyed without the judge) and
``realusersim/judge`` (keyed by the transcript's hash as well). A case whose conversation or judging
failed counts as 0 hits and enters the error rate (docs/decisions.md S24); the FI over judged cases only
is shown beside it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mimesis_pl.eval.io import write_json_atomic
from mimesis_pl.eval.simulator.base import FidelitySuite, SuiteContext, SuiteReport
from mimesis_pl.eval.simulator.charts import bar_chart
from mimesis_pl.eval.simulator.models import ChatModelSettings, SuiteModel, build_chat_model, sampling_identity
from mimesis_pl.eval.simulator.realusersim.data import (
    REALUSERSIM,
    REALUSERSIM_CARD,
    JudgePrompts,
    RealUserSimCase,
    RealUserSimItem,
    load_judge_prompts,
)
from mimesis_pl.eval.simulator.realusersim.prompt import (
    PromptTemplate,
    is_sample_judge_prompts,
    load_prompt_template,
    prompt_note,
    prompt_source,
    render_prompt,
)
from mimesis_pl.eval.simulator.realusersim.protocol import (
    CONDITIONS,
    PRIMER,
    Condition,
    build_user_prompt,
    converse,
    judge_fidelity,
    judged_turns,
)
from mimesis_pl.eval.simulator.realusersim.scoring import condition_summary
from mimesis_pl.eval.simulator.scripted import (
    scripted_fidelity_judge,
    scripted_realusersim_assistant,
    scripted_realusersim_user,
)
from mimesis_pl.eval.simulator.suite import ItemRun, fmt, item_ref, pm, run_items, suite_identity
from mimesis_pl.eval.simulator.text import FIDELITY_DIMENSIONS
from mimesis_pl.eval.tables import markdown_table
from mimesis_pl.eval.trials import RunIdentity, TaskRef, TrialFn, TrialOutcome, config_hash, join_id
from mimesis_pl.eval.values import thaw
from mimesis_pl.failures import AgentTransportFailure, JudgeFailure, SimulatorFailure
from mimesis_pl.llm import ScriptedChatSettings


class RealUserSimSuite(FidelitySuite):
    """RealUserSim PT3.

    Args:
        judge_prompts: the dataset's ``judge_prompt.txt`` (``SYSTEM PROMPT`` / ``FORMATTING PROMPT`` sections).
        simulator: the simulator under test (reference sampling: temperature 0.7, 1024 tokens).
        assistant: the fixed assistant (reference: temperature 0.7, 8192 tokens).
        judge: the judge (reference: temperature 0.001, 4096 tokens for the judgment).
        conditions: any of ``task_only``, ``correct_profile`` (the headline), ``shuffled_profile``.
        seeds: simulator/assistant seeds; FI is reported as the mean ± SEM over seeds.
        max_assistant_turns: assistant turns per conversation (⇒ at most that + 1 user messages).
        judge_max_messages: both trajectories are cut to their first N messages before keeping user turns.
        format_max_tokens, format_attempts: the JSON formatting call.
        n_boot, bootstrap_seed: the user-clustered bootstrap CI.
        simulator_prompt: a template file holding the benchmark's own simulator prompt (made from the
            dataset card; format in :mod:`.realusersim_prompt`). Without it our paraphrase runs and every
            report says it is not comparable with published FI (S77).
    """

    name = "realusersim"
    version = "1"

    def __init__(
        self,
        judge_prompts: str,
        simulator: ChatModelSettings | None = None,
        assistant: ChatModelSettings | None = None,
        judge: ChatModelSettings | None = None,
        conditions: list[Condition] | None = None,
        seeds: list[int] | None = None,
        max_assistant_turns: int = 4,
        judge_max_messages: int = 9,
        format_max_tokens: int = 1024,
        format_attempts: int = 2,
        n_boot: int = 10_000,
        bootstrap_seed: int = 1234,
        simulator_prompt: str | None = None,
    ) -> None:
        self.judge_prompts_path, self.simulator_prompt = judge_prompts, simulator_prompt
        self.settings = {
            "simulator": simulator or ScriptedChatSettings(model="rus-user", temperature=0.7, max_tokens=1024),
            "assistant": assistant or ScriptedChatSettings(model="rus-assistant", temperature=0.7, max_tokens=8192),
            "judge": judge or ScriptedChatSettings(model="rus-judge", temperature=0.001, max_tokens=4096),
        }
        self.conditions = list(conditions or CONDITIONS)
        unknown = sorted(set(self.conditions) - set(CONDITIONS))
        if unknown or len(set(self.conditions)) != len(self.conditions):
            raise ValueError(f"conditions must be distinct values of {list(CONDITIONS)}, got {self.conditions}")
        self.seeds = [0] if seeds is None else list(seeds)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")
        if max_assistant_turns < 0 or judge_max_messages < 1 or format_attempts < 1:
            raise ValueError("max_assistant_turns >= 0, judge_max_messages >= 1 and format_attempts >= 1 required")
        self.max_assistant_turns, self.judge_max_messages = max_assistant_turns, judge_max_messages
        self.format_max_tokens, self.format_attempts = format_max_tokens, format_attempts
        self.n_boot, self.bootstrap_seed = n_boot, bootstrap_seed
        self._models: dict[str, SuiteModel] = {}
        self._prompts: JudgePrompts | None = None
        self._template: PromptTemplate | None = None
        self._rows: list[dict] = []
        self._donors: dict[str, str] = {}

    def start(self) -> None:
        self._prompts = load_judge_prompts(self.judge_prompts_path)
        self._template = load_prompt_template(self.simulator_prompt) if self.simulator_prompt else None
        s = self.settings
        self._models = {
            "simulator": build_chat_model(s["simulator"], "simulator", SimulatorFailure, scripted_realusersim_user),
            "assistant": build_chat_model(
                s["assistant"], "assistant", AgentTransportFailure, scripted_realusersim_assistant
            ),
            "judge": build_chat_model(s["judge"], "judge", JudgeFailure, scripted_fidelity_judge),
        }
        self._rows, self._donors = [], {}

    def _hashes(self) -> tuple[str, str]:
        s = self.settings
        converse_hash = config_hash(
            {
                "simulator": sampling_identity(s["simulator"]),
                "assistant": sampling_identity(s["assistant"]),
                "max_assistant_turns": self.max_assistant_turns,
                "simulator_prompt": None if self._template is None else self._template.sha256,
            }
        )
        judge_hash = config_hash(
            {
                "converse": converse_hash,
                "judge": sampling_identity(s["judge"]),
                "prompts": [self._prompts.system, self._prompts.formatting],
                "judge_max_messages": self.judge_max_messages,
                "format": [self.format_max_tokens, self.format_attempts],
            }
        )
        return converse_hash, judge_hash

    async def run_batch(self, batch: list[RealUserSimItem], ctx: SuiteContext) -> None:
        """Prepare the conversations, play them, then judge the ones that finished; one row per conversation."""
        m = self._models
        converse_hash, judge_hash = self._hashes()
        talk_refs = self._converse_refs(batch, converse_hash)
        talked = await self._run_stage(
            talk_refs,
            suite_identity("realusersim-converse", self.version, m["simulator"], {"assistant": m["assistant"]}),
            self._talk,
            ctx,
        )
        rows, judge_refs = self._rows_and_judge_refs(talk_refs, talked, judge_hash)
        judged = await self._run_stage(
            judge_refs,
            suite_identity(self.name, self.version, m["simulator"], {"assistant": m["assistant"], "judge": m["judge"]}),
            self._judge,
            ctx,
        )
        self._rows.extend(apply_judgments(rows, judged))

    async def _run_stage(self, refs: list[TaskRef], identity: RunIdentity, fn: TrialFn, ctx: SuiteContext) -> ItemRun:
        done = await run_items(refs, identity, fn, ctx.cache, ctx.retry, ctx.max_concurrency)
        ctx.count(done)
        return done

    def _converse_refs(self, batch: list[RealUserSimItem], converse_hash: str) -> list[TaskRef]:
        """One cached conversation per case × condition × seed (a shuffled one is keyed by its donor too)."""
        refs = []
        for item in batch:
            self._donors[item.case.case_id] = item.donor.case_id
            for condition in self.conditions:
                shuffled = condition == "shuffled_profile"
                item_id = join_id(condition, item.case.case_id, *([item.donor.case_id] if shuffled else []))
                content = {"case": item.case, "donor": item.donor if shuffled else None}
                refs += [
                    item_ref(
                        "realusersim/converse", item_id, seed, converse_hash, (item, condition, seed), content=content
                    )
                    for seed in self.seeds
                ]
        return refs

    async def _talk(self, ref: TaskRef, _: int) -> TrialOutcome:
        m, s = self._models, self.settings
        item, condition, seed = ref.payload
        profile = {"task_only": None, "correct_profile": item.case, "shuffled_profile": item.donor}[condition]
        conversation = await converse(
            self._system_prompt(item.case, profile),
            m["simulator"],
            m["assistant"],
            s["simulator"],
            s["assistant"],
            seed,
            self.max_assistant_turns,
            primer=(self._template.primer if self._template is not None else None) or PRIMER,
        )
        return TrialOutcome(
            reward=1.0,
            info={
                "messages": list(conversation.messages),
                "termination_reason": conversation.termination_reason,
                "n_user_messages": len(conversation.user_turns),
            },
        )

    def _rows_and_judge_refs(
        self, talk_refs: list[TaskRef], talked: ItemRun, judge_hash: str
    ) -> tuple[dict[str, dict], list[TaskRef]]:
        """A row per conversation (its error if it failed) and a judge item per finished one (keyed by the
        transcript's hash); a row to be judged names its judge item under ``_judge``."""
        judge_refs, rows = [], {}
        for ref in talk_refs:
            item, condition, seed = ref.payload
            record = talked.records[ref.task_id]
            row = conversation_row(item.case, condition, seed)
            rows[ref.task_id] = row
            if record.status != "scored":
                row["error"] = f"{record.failure}: {record.error}"
                continue
            row.update(
                termination_reason=record.info["termination_reason"], n_user_messages=record.info["n_user_messages"]
            )
            messages = thaw(record.info["messages"])
            digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:12]
            judge_refs.append(
                item_ref(
                    "realusersim/judge",
                    join_id(ref.task_id, digest),
                    None,
                    judge_hash,
                    (item, condition, seed, messages),
                    content={"case": item.case, "messages": messages},
                )
            )
            row["_judge"] = judge_refs[-1].task_id
        return rows, judge_refs

    async def _judge(self, ref: TaskRef, _: int) -> TrialOutcome:
        m, s = self._models, self.settings
        item, _condition, _seed, messages = ref.payload
        real = judged_turns(item.case.original_messages, self.judge_max_messages, synthetic=False)
        synthetic = judged_turns(messages, self.judge_max_messages, synthetic=True)
        hits, judgment = await judge_fidelity(
            real, synthetic, self._prompts, m["judge"], s["judge"], self.format_max_tokens, self.format_attempts
        )
        return TrialOutcome(reward=sum(hits) / 5, info={"hits": list(hits), "judgment": judgment[:2000]})

    def _condition(self, condition: str) -> dict:
        rows = [r for r in self._rows if r["condition"] == condition]
        return condition_summary(rows, self.seeds, n_boot=self.n_boot, bootstrap_seed=self.bootstrap_seed)

    def _system_prompt(self, case: RealUserSimCase, profile: RealUserSimCase | None) -> str:
        if self._template is None or (profile is None and self._template.task_only is None):
            return build_user_prompt(case, profile)
        return render_prompt(self._template, case, profile)

    def report(self, ctx: SuiteContext) -> SuiteReport:
        if not self._rows:
            raise RuntimeError("RealUserSim: no case was run")
        if all(r["hits"] is None for r in self._rows):
            raise RuntimeError(f"RealUserSim: every case failed ({len(self._rows)}); no summary written")
        write_json_atomic(ctx.out_dir / "shuffled_profile_mapping.json", self._donors)
        conditions = {c: self._condition(c) for c in self.conditions}
        results = {
            "suite": self.name,
            "version": self.version,
            "models": {
                role: {"name": m.name, "revision": m.revision, **sampling_identity(self.settings[role])}
                for role, m in self._models.items()
            },
            "seeds": self.seeds,
            "conditions": conditions,
            "shuffled_profile_mapping": self._donors,
            "simulator_prompt": prompt_source(
                self._template, self.conditions, is_sample_judge_prompts(self.judge_prompts_path)
            ),
            "published": {"correct_profile": REALUSERSIM, "dataset_card_gpt4o": REALUSERSIM_CARD},
        }
        markdown = realusersim_markdown(self._models["simulator"].name, conditions, results["simulator_prompt"])
        return SuiteReport(results, markdown, realusersim_scalars(conditions))

    def chart(self, report: SuiteReport, path: Path) -> Path | None:
        conditions = report.results["conditions"]
        labels = ["FI", *FIDELITY_DIMENSIONS]
        series = {
            c: [v["fi"]["mean"], *[v["dimensions"][d]["mean"] for d in FIDELITY_DIMENSIONS]]
            for c, v in conditions.items()
        }
        return bar_chart(
            path,
            labels,
            series,
            ylabel="%",
            ylim=(0, 100),
            title=f"RealUserSim PT3 — {report.results['models']['simulator']['name']}",
        )


def conversation_row(case: RealUserSimCase, condition: str, seed: int) -> dict:
    """The row of one conversation before it is played out and judged (every outcome field still None)."""
    return {
        "case_id": case.case_id,
        "user_ip": case.user_ip,
        "condition": condition,
        "seed": seed,
        "hits": None,
        "error": None,
        "termination_reason": None,
        "n_user_messages": None,
    }


def apply_judgments(rows: dict[str, dict], judged: ItemRun) -> list[dict]:
    """The rows with their judge item's hits, or its failure as the row's error (``_judge`` dropped)."""
    for row in rows.values():
        record = judged.records.get(row.pop("_judge", None) or "")
        if record is not None and record.status == "scored":
            row["hits"] = list(record.info["hits"])
        elif record is not None:
            row["error"] = f"{record.failure}: {record.error}"
    return list(rows.values())


CONDITION_HEAD = [
    "condition",
    "cases",
    "FI",
    "95% CI (users)",
    *FIDELITY_DIMENSIONS,
    "close %",
    "user turns",
    "error %",
    "FI judged only",
]


def condition_cells(condition: str, v: dict) -> list[str]:
    """One line of the conditions table from a :func:`condition_summary`."""
    return [
        condition,
        str(v["n_cases"]),
        pm(v["fi"]),
        f"{fmt(v['ci95'][0])}–{fmt(v['ci95'][1])}",
        *[pm(v["dimensions"][d]) for d in FIDELITY_DIMENSIONS],
        pm(v["close_rate"]),
        pm(v["mean_user_turns"], digits=2),
        fmt(v["error_rate"]),
        pm(v["fi_judged_only"]),
    ]


def realusersim_markdown(simulator: str, conditions: dict[str, dict], simulator_prompt: dict) -> str:
    """``results.md``: the conditions table, the prompt note, the published table and the dataset card."""
    rows = [condition_cells(c, v) for c, v in conditions.items()]
    published = [[name, *[fmt(x) for x in values]] for name, values in REALUSERSIM.items()]
    return (
        f"# RealUserSim PT3: {simulator}\n\n"
        + markdown_table(CONDITION_HEAD, rows)
        + "\nFI = 100·Σhits/(5·cases), mean ± SEM over seeds; failed conversations or judgments count as "
        "0 hits (error %); CI: users resampled (all seeds pooled).\n\n"
        + prompt_note(simulator_prompt)
        + "## Published (the paper, correct profile; other assistant/judge models: context only)\n\n"
        + markdown_table(["model", "FI", *FIDELITY_DIMENSIONS], published)
        + f"\nDataset card (gpt-4o everywhere): correct profile {REALUSERSIM_CARD['correct_profile']}, "
        f"task only {REALUSERSIM_CARD['task_only']}.\n"
    )


def realusersim_scalars(conditions: dict[str, dict]) -> dict[str, float]:
    """The logged scalars: FI, error rate and each dimension's mean per condition (None ones left out)."""
    scalars = {}
    for c, v in conditions.items():
        scalars.update(
            {
                f"realusersim/{c}/fi": v["fi"]["mean"],
                f"realusersim/{c}/error_rate": v["error_rate"],
                **{f"realusersim/{c}/{d}": v["dimensions"][d]["mean"] for d in FIDELITY_DIMENSIONS},
            }
        )
    return {k: float(x) for k, x in scalars.items() if x is not None}
