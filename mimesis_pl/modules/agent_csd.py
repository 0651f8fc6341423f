"""``AgentCSD``: GRPO plus coached on-policy self-distillation (CSD).

For coached turns the same policy re-scores its own sampled tokens with a coaching note spliced into
its exact token prefix (the teacher row); a gated token-level loss pulls the student towards tokens
the coached teacher prefers. Total loss per micro-batch: ``L_pg + csd.coef · L_csd``. The teacher
forward uses the current weights, under ``no_grad``, in the same mode as the student, inside the
micro-batch loop (so it moves with the student across mini-batches).

A step's stages run in a declared order: the rollout stage, then the coach stage, which adds the
step's :class:`~mimesis_pl.rollout.step.TeacherBatch`; the update reads it from the step it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..chat import pad_id_of
from ..csd.evidence import lapse_turns
from ..rl.losses import csd_estimator_reads_topk, csd_loss, gap_gate_by_group
from ..rl.placebo import and_mask_placebo
from ..rl.policy_batch import LossInputs, PolicyBatch
from ..rl.teacher import pack_teacher_rows
from ..rl.token_ops import HeadLogprobs
from ..rollout.coaching import CoachingSettings, CoachStage
from ..rollout.settings import AdvantageSettings, RolloutSettings
from ..rollout.step import RLStep, TeacherBatch
from ..rollout.validation import ValidationSettings
from .agent_grpo import DEFAULT_ADVANTAGE, DEFAULT_PPO, DEFAULT_ROLLOUT, REFERENCE_RL_OPTIM, AgentGRPO
from .ppo_module import ExtraLoss
from .settings import CSDSettings, ModelSettings, OptimSettings, PPOSettings
from .teacher_forward import (
    TeacherScores,
    check_no_dropout,
    teacher_logprobs,
    teacher_scores,
    teacher_scores_prefix_cached,
)

DEFAULT_CSD, DEFAULT_COACHING = CSDSettings(), CoachingSettings()


class AgentCSD(AgentGRPO):
    """The agent trained with GRPO + CSD: a rollout stage, then a coach stage, then the update.

    Args (beyond :class:`AgentGRPO`):
        csd: the CSD term (coefficient, estimator, gate, teacher forward).
        coaching: the coach and how teacher rows are built.
    """

    def __init__(
        self,
        policy: ModelSettings,
        rollout: RolloutSettings = DEFAULT_ROLLOUT,
        advantage: AdvantageSettings = DEFAULT_ADVANTAGE,
        ppo: PPOSettings = DEFAULT_PPO,
        csd: CSDSettings = DEFAULT_CSD,
        coaching: CoachingSettings = DEFAULT_COACHING,
        optim: OptimSettings = REFERENCE_RL_OPTIM,
        validation: ValidationSettings | None = None,
    ) -> None:
        super().__init__(
            policy=policy, rollout=rollout, advantage=advantage, ppo=ppo, optim=optim, validation=validation
        )
        self.save_hyperparameters()
        self.csd = csd
        self.coach_stage = CoachStage(coaching)

    def configure_model(self) -> None:
        super().configure_model()
        check_no_dropout(self.model.config, where=f"{self.model_path}/config.json")

    # -- stages ------------------------------------------------------------------------------------

    def stages(self) -> list[tuple[str, Any]]:
        return [*super().stages(), ("coach", self.coach_stage)]

    def setup(self, stage: str) -> None:
        super().setup(stage)
        if stage == "fit":  # after the rollout stage: the coach must not share the users' endpoint
            self.coach_stage.setup(self.tokenizer, user_shim_url=self.rollout_stage.user_shim_url)
            self.coach_stage.notes_path = coach_notes_path(self.trainer)
            rollout = self.rollout_stage
            if self.max_staleness >= 1:  # notes in each background job (A91)
                coach = self.coach_stage
                rollout.job_notes = lambda chosen, rows: coach.write_notes(chosen, rows, rollout.privileged_source())
                coach.run_on = rollout.run_on_loop

    def collect(self, batch: list[dict[str, Any]], batch_idx: int) -> RLStep:
        step = super().collect(batch, batch_idx)
        if step.notes is not None:  # written in the rollouts' background job
            exp = step.experience
            chosen = [exp.trajectories[i] for i in exp.trained]
            teacher = self.coach_stage.teacher_from_notes(chosen, *step.notes, global_step=int(self.global_step))
            return replace(step, teacher=teacher)
        teacher = self.coach_stage.teacher(
            step, batch, self.rollout_stage.privileged_source(), global_step=int(self.global_step)
        )
        return replace(step, teacher=teacher)

    # -- the update --------------------------------------------------------------------------------

    def extra_loss(self, step: RLStep) -> ExtraLoss | None:
        if step.teacher is None:
            if step.experience.trained:
                raise RuntimeError(
                    "AgentCSD.update needs the step's teacher rows (RLStep.teacher, from the coach stage)"
                )
            return None
        exp = step.experience
        lapses = [lapse_turns(exp.trajectories[i].messages) for i in exp.trained]
        return CSDTerm(self, step.teacher, lapses)

    def csd_term(
        self,
        teacher: TeacherBatch,
        inputs: LossInputs,
        rows: torch.Tensor,
        logprobs: torch.Tensor,
        width: int,
        lapses: list[set[int]] | None = None,
        head: HeadLogprobs | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """``(α · L_csd, metrics)`` for the trajectories ``rows`` of the batch (student ``logprobs [b, width]``;
        ``head`` scores the teacher's top-k ids in the same forward, for ``distill``)."""
        t, advantages, response = inputs.batch, inputs.advantages, inputs.response_mask
        length = t.input_ids.shape[1]
        real = [teacher.real[int(i)] for i in rows]
        placebo = [teacher.placebo[int(i)] for i in rows] if teacher.placebo is not None else None
        n_forwards = self._teacher_forwards(real, placebo)
        self._equalize_forwards(n_forwards)
        if n_forwards == 0:
            zero = logprobs.sum() * 0.0  # keep the graph identical across micro-batches
            return zero, {"csd/tokens": 0.0}
        top_k = self.csd.distill_top_k if csd_estimator_reads_topk(self.csd.estimator) else 0
        if self.csd.teacher_mode == "prefix_cache":
            scores, placebo_full, mask_full = self._teacher_prefix_cached(
                t, rows, real, placebo, length, teacher, top_k
            )
        else:
            scores, placebo_full, mask_full = self._teacher_packed(real, placebo, length, top_k)
        teacher_lp = scores.logprobs[:, 1 : width + 1]  # maps are absolute; student column j scores token j + 1
        mask = mask_full[:, 1 : width + 1].to(logprobs.device) & response[rows, :width].bool()
        placebo_lp = placebo_full[:, 1 : width + 1] if placebo_full is not None else None
        if placebo_lp is not None and self.csd.placebo_missing == "drop":  # the reference's AND mask
            mask = and_mask_placebo(mask, placebo_lp.to(mask.device))  # (docs/decisions.md A62)
        if self.global_step < self.csd.warmup_steps:
            mask = torch.zeros_like(mask)
        if self.csd.adv_gate is not None:
            mask = mask & (advantages[rows, :width].abs() <= self.csd.adv_gate)
        topk = distill_topk(scores, mask, width, head) if top_k else {}
        loss, m = csd_loss(
            logprobs,
            teacher_lp.to(logprobs.dtype),
            mask.to(logprobs.dtype),
            estimator=self.csd.estimator,
            beta=self.csd.beta,
            placebo_logprobs=None if placebo_lp is None else placebo_lp.to(logprobs.dtype),
            **topk,
        )
        metrics = {f"csd/{k}": float(v) for k, v in m.items()}
        if lapses is not None:  # the study's diagnostics: gap and gate on turns that restate the opening vs not
            lapse = _lapse_mask(rows, teacher.spans, lapses, length)[:, 1 : width + 1].to(mask.device)
            split = gap_gate_by_group(
                logprobs,
                teacher_lp.to(logprobs.dtype),
                mask.to(logprobs.dtype),
                {"lapse": lapse, "steady": ~lapse},
                beta=self.csd.beta,
                placebo_logprobs=None if placebo_lp is None else placebo_lp.to(logprobs.dtype),
            )
            metrics.update({f"csd/{k}": v for k, v in split.items() if not math.isnan(v)})
        metrics["csd/tokens"] = float(mask.sum())
        metrics["csd/loss"] = float(loss.detach())
        return self.csd.coef * torch.nan_to_num(loss), metrics

    def csd_empty_microbatch(self) -> None:
        """A micro-batch with no trajectory on this rank, as a real one: student forward, the teacher forwards of
        the busiest rank, backward (ranks stay in step)."""
        student = self._dummy_logprobs()
        self._equalize_forwards(0)
        self.manual_backward(student.sum() * 0.0)

    def _teacher_forwards(self, real, placebo) -> int:
        n_rows = sum(len(r.rows) for r in real) + (sum(len(p.rows) for p in placebo) if placebo else 0)
        if self.csd.teacher_mode == "packed":
            return -(-sum(len(r.rows) for r in real) // self.csd.teacher_chunk_rows) + (
                -(-sum(len(p.rows) for p in placebo) // self.csd.teacher_chunk_rows) if placebo else 0
            )
        prefixes = sum(1 for k, r in enumerate(real) if r.rows or (placebo and placebo[k].rows))
        return n_rows + prefixes if n_rows else 0

    def _teacher_packed(self, real, placebo, length, top_k: int = 0):
        packed = pack_teacher_rows(real, response_length=length, pad_id=pad_id_of(self.tokenizer))
        scores = teacher_scores(self.model, packed, self.csd.teacher_chunk_rows, top_k=top_k)
        placebo_full = None
        if placebo is not None and any(p.rows for p in placebo):
            packed_p = pack_teacher_rows(placebo, response_length=length, pad_id=pad_id_of(self.tokenizer))
            placebo_full = teacher_logprobs(self.model, packed_p, self.csd.teacher_chunk_rows, fill=float("nan"))
        return scores, placebo_full, packed.teacher_mask

    def _teacher_prefix_cached(self, t: PolicyBatch, rows, real, placebo, length, teacher, top_k: int = 0):
        b = len(rows)
        full = TeacherScores(
            torch.zeros(b, length, device=self.device),
            torch.zeros(b, length, top_k, dtype=torch.long, device=self.device) if top_k else None,
            torch.zeros(b, length, top_k, device=self.device) if top_k else None,
        )
        placebo_full = torch.full((b, length), float("nan"), device=self.device) if placebo is not None else None
        mask_full = torch.zeros(b, length, dtype=torch.bool)
        for k, i in enumerate(rows.tolist()):
            sets = [real[k]] + ([placebo[k]] if placebo is not None else [])
            if not any(s.rows for s in sets):
                continue
            n = int(t.attention_mask[i].sum())
            fills = (0.0, float("nan"))[: len(sets)]
            outs = teacher_scores_prefix_cached(
                self.model, t.input_ids[i, :n], teacher.spans[i], sets, fill=fills, top_k=(top_k,)
            )
            for got, into in zip(outs[0], full):
                if into is not None:
                    into[k, :n] = got
            if placebo_full is not None:
                placebo_full[k, :n] = outs[1].logprobs
            mask_full[k, : real[k].teacher_mask.numel()] = real[k].teacher_mask
        return full, placebo_full, mask_full


def distill_topk(
    scores: TeacherScores, mask: torch.Tensor, width: int, head: HeadLogprobs | None
) -> dict[str, torch.Tensor]:
    """``csd_loss``'s ``distill`` inputs for a micro-batch: the teacher's top-k log-probs and the student's at the
    same ids, ``[b, width, K]`` float32 on the coached columns of ``mask [b, width]`` (0 elsewhere).

    The student's are taken from its own forward (``head``, with gradient) at the coached columns only, so the
    vocabulary projection is the chunked head's, on ``Σ mask`` positions × K ids (the reference gathers at the
    teacher's ids inside its student forward, dp_actor.py @bb891c4).
    """
    if head is None:
        raise RuntimeError("model.init_args.csd.estimator distill: the update's student forward returned no head")
    ids = scores.topk_ids[:, 1 : width + 1].to(mask.device)  # absolute maps: column j is the token j + 1
    teacher = scores.topk_logprobs[:, 1 : width + 1].to(mask.device)
    b_idx, cols = mask.nonzero(as_tuple=True)
    student = torch.zeros(teacher.shape, dtype=torch.float32, device=mask.device)
    student = student.index_put((b_idx, cols), head.at(b_idx, cols, ids[b_idx, cols]).float())
    teacher = torch.where(mask[..., None], teacher, torch.zeros_like(teacher))
    return {"student_topk_logprobs": student, "teacher_topk_logprobs": teacher}


def _lapse_mask(rows, spans, lapses, length: int) -> torch.Tensor:
    """``[b, length]`` bool: the generated tokens of each row's lapse turns (absolute positions)."""
    out = torch.zeros(len(rows), length, dtype=torch.bool)
    for k, i in enumerate(rows.tolist()):
        for turn in lapses[i]:
            if turn < len(spans[i]):
                span = spans[i][turn]
                out[k, span.start : min(span.end, length)] = True
    return out


@dataclass
class CSDTerm:
    """The CSD term of one step's update (an ``ExtraLoss``): the step's teacher rows scored against each micro-batch."""

    module: AgentCSD
    teacher: TeacherBatch
    lapses: list[set[int]] | None = None  # per trained trajectory, its turns that restate the opening

    @property
    def metrics(self) -> dict[str, float]:
        return self.teacher.metrics

    @property
    def weighting(self):
        return self.module.csd.weighting

    @property
    def needs_head(self) -> bool:
        return csd_estimator_reads_topk(self.module.csd.estimator)

    def __call__(self, rows, logprobs, width, inputs: LossInputs, head: HeadLogprobs | None = None):
        return self.module.csd_term(self.teacher, inputs, rows, logprobs, width, self.lapses, head)

    def empty_microbatch(self) -> None:
        self.module.csd_empty_microbatch()


def coach_notes_path(trainer: Any) -> Path | None:
    """``<run folder>/coach_notes.jsonl`` (``coach_notes.rank<r>.jsonl`` on rank r > 0); ``None`` without a
    trainer or run folder."""
    if trainer is None or not (trainer.log_dir or trainer.default_root_dir):
        return None
    rank = trainer.global_rank
    name = "coach_notes.jsonl" if rank == 0 else f"coach_notes.rank{rank}.jsonl"
    return Path(trainer.log_dir or trainer.default_root_dir) / name
