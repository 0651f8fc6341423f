"""Turing evaluation: the simulator writes a held-out user turn, a judge rates
which of A/B a human wrote; canonical ratings, capped reward, tie rate, ground-truth accuracy, penalties.

Two cached stages: ``turing/generate`` (keyed without the judge, so a new judge re-scores the same
generations) and ``turing/score`` (keyed by the generated text's hash as well). Resume merges cached
and new results (docs/decisions.md S25). If every judge call failed the report raises instead of writing a NaN summary.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from mimesis_pl.eval.simulator.base import FidelitySuite, SuiteContext, SuiteReport
from mimesis_pl.eval.simulator.charts import bar_chart
from mimesis_pl.eval.simulator.models import (
    ChatModelSettings,
    SuiteModel,
    build_chat_model,
    sampling_identity,
    stable_hash,
)
from mimesis_pl.eval.simulator.scripted import scripted_turing_judge, scripted_turing_user
from mimesis_pl.eval.simulator.suite import ItemRun, fmt, item_ref, mean_sem, pm, run_items, suite_identity
from mimesis_pl.eval.simulator.text import parse_turing_rating
from mimesis_pl.eval.simulator.turing.data import TuringRow
from mimesis_pl.eval.simulator.turing.scoring import PENALTIES, clean_generation, penalties, seed_summary
from mimesis_pl.eval.tables import markdown_table
from mimesis_pl.eval.trials import TaskRef, TrialOutcome, config_hash, join_id
from mimesis_pl.failures import JudgeFailure, SimulatorFailure
from mimesis_pl.llm import ScriptedChatSettings
from mimesis_pl.metrics.turing import canonical_rating, turing_reward

JUDGE_SYSTEM = (
    "You are an expert at telling real people's messages from machine-written ones. You see a user's earlier "
    "messages, a conversation, and two candidate next messages by that user, A and B: one was written by the "
    "real user, the other by a model. Rate which one the real user wrote on a 1-7 scale: 1 = certainly A, "
    '4 = cannot tell, 7 = certainly B. Reply with JSON only: {"rating": <1-7>}.'
)


def judge_messages(row: TuringRow, a: str, b: str) -> list[dict[str, str]]:
    user = (
        f"The user's earlier messages:\n{row.user_history}\n\nThe conversation so far:\n{row.context}\n\n"
        f"Response A:\n{a}\n\nResponse B:\n{b}\n\nWhich response did the real user write?"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


class TuringSuite(FidelitySuite):
    """Turing evaluation on PRISM held-out turns, one run per seed.

    Args:
        simulator: the simulator under test (``scripted``: our offline stand-in; reference sampling:
            temperature 1.0, 16384 tokens, a per-request seed).
        judge: the pairwise judge (default temperature 0, 64 tokens).
        seeds: generation seeds; each seed is one run, aggregated as mean ± SEM over seeds.
        comparable_tolerance: a seed whose scored count differs from the modal count by more than this
            share is marked not comparable.
    """

    name = "turing"
    version = "1"

    def __init__(
        self,
        simulator: ChatModelSettings | None = None,
        judge: ChatModelSettings | None = None,
        seeds: list[int] | None = None,
        comparable_tolerance: float = 0.05,
    ) -> None:
        self.simulator_settings = simulator or ScriptedChatSettings(
            model="turing-user", temperature=1.0, max_tokens=16384
        )
        self.judge_settings = judge or ScriptedChatSettings(model="turing-judge", temperature=0.0, max_tokens=64)
        self.seeds = [0, 1, 2] if seeds is None else list(seeds)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct ints, got {self.seeds}")
        self.comparable_tolerance = comparable_tolerance
        self._models: dict[str, SuiteModel] = {}
        self._rows: list[TuringRow] = []
        self._scores: dict[str, object] = {}
        self._gen_failed: dict[int, int] = {}
        self._score_failed: dict[int, Counter] = {}

    def start(self) -> None:
        self._models = {
            "simulator": build_chat_model(self.simulator_settings, "simulator", SimulatorFailure, scripted_turing_user),
            "judge": build_chat_model(self.judge_settings, "judge", JudgeFailure, scripted_turing_judge),
        }
        self._rows, self._scores = [], {}
        self._gen_failed = {s: 0 for s in self.seeds}
        self._score_failed = {s: Counter() for s in self.seeds}

    def _hashes(self) -> tuple[str, str]:
        gen_hash = config_hash(sampling_identity(self.simulator_settings))
        score_hash = config_hash(
            {"generation": gen_hash, "judge": sampling_identity(self.judge_settings), "prompt": JUDGE_SYSTEM}
        )
        return gen_hash, score_hash

    async def run_batch(self, batch: list[TuringRow], ctx: SuiteContext) -> None:
        """Generate one turn per row × seed, then judge every generation that has a user history to judge against."""
        sim, judge = self._models["simulator"], self._models["judge"]
        gen_hash, score_hash = self._hashes()
        gen_refs = [
            item_ref("turing/generate", row.key, seed, gen_hash, (row, seed), content=row)
            for seed in self.seeds
            for row in batch
        ]
        gen_identity = suite_identity("turing-generate", self.version, sim, {})
        generated = await run_items(gen_refs, gen_identity, self._generate, ctx.cache, ctx.retry, ctx.max_concurrency)
        ctx.count(generated)
        score_refs = self._score_refs(gen_refs, generated, score_hash)
        score_identity = suite_identity(self.name, self.version, sim, {"judge": judge})
        scored = await run_items(score_refs, score_identity, self._score, ctx.cache, ctx.retry, ctx.max_concurrency)
        ctx.count(scored)
        self._keep_scores(score_refs, scored)
        self._rows.extend(batch)

    async def _generate(self, ref: TaskRef, _: int) -> TrialOutcome:
        ss = self.simulator_settings
        row, seed = ref.payload
        raw = await self._models["simulator"].complete(
            row.prompt, temperature=ss.temperature, max_tokens=ss.max_tokens, seed=seed
        )
        text = clean_generation(raw)
        if not text:
            raise SimulatorFailure(f"{row.key} seed {seed}: empty generation after cleaning: {raw[:80]!r}")
        return TrialOutcome(reward=1.0, info={"text": text})

    def _score_refs(self, gen_refs: list[TaskRef], generated: ItemRun, score_hash: str) -> list[TaskRef]:
        """A judge item per finished generation (keyed by its text's hash); failed generations are counted."""
        score_refs = []
        for ref in gen_refs:
            row, seed = ref.payload
            record = generated.records.get(ref.task_id)
            if record is None or record.status != "scored":
                self._gen_failed[seed] += 1
                continue
            if not row.user_history.strip():
                continue  # no history to judge against (reference: skipped at scoring)
            text = record.info["text"]
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
            score_refs.append(
                item_ref(
                    "turing/score", join_id(row.key, digest), seed, score_hash, (row, seed, text), content=(row, text)
                )
            )
        return score_refs

    async def _score(self, ref: TaskRef, _: int) -> TrialOutcome:
        js = self.judge_settings
        row, seed, text = ref.payload
        generated_is_b = stable_hash(text, row.user_id, row.post_id, row.target_idx) % 2 == 1
        a, b = (row.ground_truth, text) if generated_is_b else (text, row.ground_truth)
        reply = await self._models["judge"].complete(
            judge_messages(row, a, b), temperature=js.temperature, max_tokens=js.max_tokens
        )
        raw = parse_turing_rating(reply)
        rating = canonical_rating(raw, generated_is_b)
        return TrialOutcome(
            reward=turing_reward(rating),
            info={
                "raw": raw,
                "rating": rating,
                "generated_is_b": generated_is_b,
                "seed": seed,
                **penalties(text, row),
            },
        )

    def _keep_scores(self, score_refs: list[TaskRef], scored: ItemRun) -> None:
        for ref in score_refs:
            record = scored.records[ref.task_id]
            seed = ref.payload[1]
            if record.status == "scored":
                self._scores[ref.task_id] = record
            else:
                self._score_failed[seed][record.failure or "unknown"] += 1

    def _per_seed(self, seed: int) -> dict[str, object]:
        records = [r for r in self._scores.values() if r.info["seed"] == seed]
        return seed_summary(seed, records, self._score_failed[seed], self._gen_failed[seed])

    def _check_scored(self) -> None:
        attempted = len(self._scores) + sum(sum(c.values()) for c in self._score_failed.values())
        if attempted and not self._scores:
            raise RuntimeError(
                f"Turing: every judge call failed ({attempted} items, "
                f"{dict(sum(self._score_failed.values(), Counter()))}); no summary written"
            )
        if not self._scores:
            raise RuntimeError("Turing: no item could be scored (every generation failed or no row has a history)")

    def report(self, ctx: SuiteContext) -> SuiteReport:
        self._check_scored()
        seeds = [self._per_seed(s) for s in self.seeds]
        mark_comparable(seeds, self.comparable_tolerance)
        summary = {m: mean_sem([s[m] for s in seeds]) for m in TURING_METRICS}
        results = {
            "suite": self.name,
            "version": self.version,
            "simulator": self._models["simulator"].name,
            "simulator_revision": self._models["simulator"].revision,
            "judge": self._models["judge"].name,
            "rows": len(self._rows),
            "seeds": self.seeds,
            "summary": summary,
            "per_seed": seeds,
            "settings": {
                "simulator": sampling_identity(self.simulator_settings),
                "judge": sampling_identity(self.judge_settings),
            },
            "published": "none comparable: the paper reports pairwise realism win rates between simulators",
        }
        scalars = {f"turing/{m}": float(v["mean"]) for m, v in summary.items() if v["mean"] is not None}
        scalars["turing/judge_failures"] = float(sum(s["judge_failures"] for s in seeds))
        return SuiteReport(results, turing_markdown(results), scalars)

    def chart(self, report: SuiteReport, path: Path) -> Path | None:
        seeds = report.results["per_seed"]
        series = {f"seed {s['seed']}": [s["histogram"][str(k)] for k in range(1, 8)] for s in seeds}
        return bar_chart(
            path,
            [str(k) for k in range(1, 8)],
            series,
            ylabel="items",
            title=f"Turing ratings (canonical; 4 = tie) — {report.results['simulator']}",
        )


TURING_METRICS = (
    "turing_rating_mean",
    "turing_reward_mean",
    "tie_rate",
    "gt_accuracy",
    *(f"penalty_{p}" for p in PENALTIES),
)

SEED_HEAD = [
    "seed",
    "n scored",
    "rating",
    "reward",
    "tie rate",
    "gt acc",
    "assistant-like",
    "copy",
    "wrong role",
    "judge fail",
    "gen fail",
    "comparable",
]


def mark_comparable(seeds: list[dict], tolerance: float) -> None:
    """Set each seed's ``comparable``: its scored count is within ``tolerance`` × the modal count of the mode."""
    modal = Counter(s["n_scored"] for s in seeds).most_common(1)[0][0]
    for s in seeds:
        s["comparable"] = abs(s["n_scored"] - modal) <= tolerance * max(modal, 1)


def seed_cells(s: dict) -> list[str]:
    """One seed's line of the table."""
    return [
        str(s["seed"]),
        str(s["n_scored"]),
        fmt(s["turing_rating_mean"], 2),
        fmt(s["turing_reward_mean"], 3),
        fmt(s["tie_rate"], 2),
        fmt(s["gt_accuracy"], 2),
        fmt(s["penalty_assistant_like"], 2),
        fmt(s["penalty_source_copy"], 2),
        fmt(s["penalty_wrong_role"], 2),
        str(s["judge_failures"]),
        str(s["generation_failures"]),
        "yes" if s["comparable"] else "NO",
    ]


def summary_cells(summary: dict) -> list[str]:
    """The table's last line: mean ± SEM over seeds of every metric (counts left blank)."""
    return [
        "mean ± SEM",
        "",
        pm(summary["turing_rating_mean"], digits=2),
        pm(summary["turing_reward_mean"], digits=3),
        pm(summary["tie_rate"], digits=2),
        pm(summary["gt_accuracy"], digits=2),
        pm(summary["penalty_assistant_like"], digits=2),
        pm(summary["penalty_source_copy"], digits=2),
        pm(summary["penalty_wrong_role"], digits=2),
        "",
        "",
        "",
    ]


def turing_markdown(results: dict) -> str:
    """``results.md``: one line per seed, the mean ± SEM line, the reading notes."""
    rows = [seed_cells(s) for s in results["per_seed"]] + [summary_cells(results["summary"])]
    return (
        f"# Turing: {results['simulator']} judged by {results['judge']}\n\n"
        + markdown_table(SEED_HEAD, rows)
        + "\nRating: canonical 1-7, higher = the generated turn looked more human (4 = tie). gt acc = "
        "share of non-tie ratings that picked the real turn (0.5 = indistinguishable). Failed "
        "generations and judge calls are unscored and counted, never rated.\n"
        f"Published: {results['published']}.\n"
    )
