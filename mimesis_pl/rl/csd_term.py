"""The CSD term of the update, free of Lightning: what one step's coached teacher rows add to each micro-batch's loss.

:class:`CSDTerm` is the ``ExtraLoss`` the policy update calls per micro-batch (``modules.ppo_module``): it scores the
step's teacher rows with the same policy (``teacher_forward``), masks and gates the coached tokens, and returns
``α · L_csd`` (:func:`~mimesis_pl.rl.losses.csd_loss`) with its metrics. What it needs from the training process
is :class:`TrainingHooks` — the model, the pad id, the step, and the two calls that keep data-parallel ranks in
step — so the whole term reads, and is tested, without a LightningModule (issue #38).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch

from .losses import csd_estimator_reads_topk, csd_loss, gap_gate_by_group, resolve_csd_estimator
from .placebo import and_mask_placebo
from .policy_batch import LossInputs, PolicyBatch
from .teacher import TeacherBatch, pack_teacher_rows
from .teacher_forward import TeacherScores, teacher_logprobs, teacher_scores, teacher_scores_prefix_cached
from .token_ops import HeadLogprobs


@dataclass
class CSDSettings:
    """Coached self-distillation: the weight and shape of the CSD term and how the teacher forward runs.

    Args:
        coef: α, the weight of the CSD loss (reference 0.01).
        estimator: the CSD loss (:func:`mimesis_pl.rl.losses.csd_loss`; the reference's ``SDPO_ESTIMATOR``):
            ``sdar`` (σ(β·Δ)-gated imitation of the sampled token; the default, as in the reference's launcher),
            ``ref`` (``−Δ·log π`` per-sequence mean, signed; the reference yaml's default), ``k3`` (Schulman's k3
            of the sampled token, clamped to ±10) or ``distill`` (reverse KL(student ‖ teacher) over the
            teacher's top-k tokens plus a tail bucket, the reference's ``full_distillation``: it can move
            probability onto tokens the policy did not sample; docs/decisions.md A100). ``sdar``, ``ref`` and
            ``k3`` read only the sampled token; a placebo corrects their teacher. ``distill`` distils the raw
            teacher: a placebo changes only its mask (``placebo_missing``) and the gap metrics, as in the
            reference (A100). Your own: ``package.module:function`` (a function with
            :func:`~mimesis_pl.rl.losses.register_csd_estimator`'s keyword inputs, imported and registered under
            that path; one that asks for the top-k inputs gets them, as ``distill``; docs/extending.md).
        distill_top_k: K, the teacher's most likely tokens per coached position that ``distill`` matches
            (reference ``SDPO_TOPK`` 20); the student's log-probs are taken at these ids, not renormalised.
        beta: gate sharpness of ``sdar`` (reference 5.0).
        warmup_steps: optimiser steps with the CSD term off.
        adv_gate: keep only coached tokens with ``|advantage| <= adv_gate`` (``None``: off).
        teacher_chunk_rows: teacher rows per forward (``packed`` mode).
        teacher_mode: ``prefix_cache`` forwards each coached trajectory's prefix once and reuses its KV cache
            for every teacher row (real and placebo); ``packed`` forwards whole left-padded rows in chunks.
        placebo_missing: a coached token without a placebo inside a trajectory that has placebos is
            ``drop``-ped (the reference's AND mask) or scored on the ``raw`` gap (docs/decisions.md A62).
        weighting: how each micro-batch's CSD token-mean enters the gradient: ``micro_batch`` (the
            reference's loss aggregation: 1 / the number of micro-batches of the mini-batch) or
            ``pg_token_share`` (the micro-batch's share of the mini-batch's policy-gradient tokens, as the
            PG term; docs/decisions.md A63).
    """

    coef: float = 0.01
    estimator: str = "sdar"
    distill_top_k: int = 20
    beta: float = 5.0
    warmup_steps: int = 0
    adv_gate: float | None = None
    teacher_chunk_rows: int = 4
    teacher_mode: Literal["prefix_cache", "packed"] = "prefix_cache"
    placebo_missing: Literal["drop", "raw"] = "drop"
    weighting: Literal["micro_batch", "pg_token_share"] = "micro_batch"

    def __post_init__(self) -> None:
        where = "model.init_args.csd"
        resolve_csd_estimator(self.estimator, key=f"{where}.estimator")
        choices = {
            "teacher_mode": ("prefix_cache", "packed"),
            "placebo_missing": ("drop", "raw"),
            "weighting": ("micro_batch", "pg_token_share"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{where}.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if isinstance(self.distill_top_k, bool) or not isinstance(self.distill_top_k, int) or self.distill_top_k < 1:
            raise ValueError(
                f"{where}.distill_top_k must be an integer >= 1 (reference 20), got {self.distill_top_k!r}"
            )


@dataclass
class TrainingHooks:
    """What the CSD term needs from the training process (the module builds it for each step).

    Args:
        model: the policy (the teacher is the same weights with the note in context).
        pad_id: the tokenizer's pad id (packed teacher rows).
        device: where the teacher's tensors go.
        global_step: the optimiser step now (``warmup_steps``; it moves between the mini-batches of one update).
        equalize_forwards: run dummy forwards until every rank ran as many as the busiest (FSDP gathers).
        empty_microbatch: forward and backward a zero loss on a rank with no trajectory in this micro-batch.
    """

    model: torch.nn.Module
    pad_id: int
    device: torch.device
    global_step: Callable[[], int]
    equalize_forwards: Callable[[int], None]
    empty_microbatch: Callable[[], None]


@dataclass
class CSDTerm:
    """The CSD term of one step's update (an ``ExtraLoss``): the step's teacher rows scored against each micro-batch.

    ``lapses``: per trained trajectory, its turns that restate the opening (the study's gap/gate split).
    """

    settings: CSDSettings
    teacher: TeacherBatch
    hooks: TrainingHooks
    lapses: list[set[int]] | None = None

    @property
    def metrics(self) -> dict[str, float]:
        return self.teacher.metrics

    @property
    def weighting(self) -> Literal["micro_batch", "pg_token_share"]:
        return self.settings.weighting

    @property
    def needs_head(self) -> bool:
        return csd_estimator_reads_topk(self.settings.estimator)

    def __call__(
        self,
        rows: torch.Tensor,
        logprobs: torch.Tensor,
        width: int,
        inputs: LossInputs,
        head: HeadLogprobs | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """``(α · L_csd, metrics)`` for the trajectories ``rows`` of the batch (student ``logprobs [b, width]``;
        ``head`` scores the teacher's top-k ids in the same forward, for ``distill``)."""
        t, advantages, response = inputs.batch, inputs.advantages, inputs.response_mask
        teacher, lapses, csd = self.teacher, self.lapses, self.settings
        length = t.input_ids.shape[1]
        real = [teacher.real[int(i)] for i in rows]
        placebo = [teacher.placebo[int(i)] for i in rows] if teacher.placebo is not None else None
        n_forwards = self._teacher_forwards(real, placebo)
        self.hooks.equalize_forwards(n_forwards)
        if n_forwards == 0:
            zero = logprobs.sum() * 0.0  # keep the graph identical across micro-batches
            return zero, {"csd/tokens": 0.0}
        top_k = csd.distill_top_k if csd_estimator_reads_topk(csd.estimator) else 0
        if csd.teacher_mode == "prefix_cache":
            scores, placebo_full, mask_full = self._teacher_prefix_cached(
                t, rows, real, placebo, length, teacher, top_k
            )
        else:
            scores, placebo_full, mask_full = self._teacher_packed(real, placebo, length, top_k)
        teacher_lp = scores.logprobs[:, 1 : width + 1]  # maps are absolute; student column j scores token j + 1
        mask = mask_full[:, 1 : width + 1].to(logprobs.device) & response[rows, :width].bool()
        placebo_lp = placebo_full[:, 1 : width + 1] if placebo_full is not None else None
        if placebo_lp is not None and csd.placebo_missing == "drop":  # the reference's AND mask
            mask = and_mask_placebo(mask, placebo_lp.to(mask.device))  # (docs/decisions.md A62)
        if self.hooks.global_step() < csd.warmup_steps:
            mask = torch.zeros_like(mask)
        if csd.adv_gate is not None:
            mask = mask & (advantages[rows, :width].abs() <= csd.adv_gate)
        topk = distill_topk(scores, mask, width, head) if top_k else {}
        loss, m = csd_loss(
            logprobs,
            teacher_lp.to(logprobs.dtype),
            mask.to(logprobs.dtype),
            estimator=csd.estimator,
            beta=csd.beta,
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
                beta=csd.beta,
                placebo_logprobs=None if placebo_lp is None else placebo_lp.to(logprobs.dtype),
            )
            metrics.update({f"csd/{k}": v for k, v in split.items() if not math.isnan(v)})
        metrics["csd/tokens"] = float(mask.sum())
        metrics["csd/loss"] = float(loss.detach())
        return csd.coef * torch.nan_to_num(loss), metrics

    def empty_microbatch(self) -> None:
        """A micro-batch with no trajectory on this rank, as a real one: student forward, the teacher forwards of
        the busiest rank, backward (ranks stay in step)."""
        self.hooks.empty_microbatch()

    def _teacher_forwards(self, real, placebo) -> int:
        n_rows = sum(len(r.rows) for r in real) + (sum(len(p.rows) for p in placebo) if placebo else 0)
        if self.settings.teacher_mode == "packed":
            return -(-sum(len(r.rows) for r in real) // self.settings.teacher_chunk_rows) + (
                -(-sum(len(p.rows) for p in placebo) // self.settings.teacher_chunk_rows) if placebo else 0
            )
        prefixes = sum(1 for k, r in enumerate(real) if r.rows or (placebo and placebo[k].rows))
        return n_rows + prefixes if n_rows else 0

    def _teacher_packed(self, real, placebo, length, top_k: int = 0):
        packed = pack_teacher_rows(real, response_length=length, pad_id=self.hooks.pad_id)
        scores = teacher_scores(self.hooks.model, packed, self.settings.teacher_chunk_rows, top_k=top_k)
        placebo_full = None
        if placebo is not None and any(p.rows for p in placebo):
            packed_p = pack_teacher_rows(placebo, response_length=length, pad_id=self.hooks.pad_id)
            placebo_full = teacher_logprobs(
                self.hooks.model, packed_p, self.settings.teacher_chunk_rows, fill=float("nan")
            )
        return scores, placebo_full, packed.teacher_mask

    def _teacher_prefix_cached(self, t: PolicyBatch, rows, real, placebo, length, teacher, top_k: int = 0):
        b = len(rows)
        full = TeacherScores(
            torch.zeros(b, length, device=self.hooks.device),
            torch.zeros(b, length, top_k, dtype=torch.long, device=self.hooks.device) if top_k else None,
            torch.zeros(b, length, top_k, device=self.hooks.device) if top_k else None,
        )
        placebo_full = torch.full((b, length), float("nan"), device=self.hooks.device) if placebo is not None else None
        mask_full = torch.zeros(b, length, dtype=torch.bool)
        for k, i in enumerate(rows.tolist()):
            sets = [real[k]] + ([placebo[k]] if placebo is not None else [])
            if not any(s.rows for s in sets):
                continue
            n = int(t.attention_mask[i].sum())
            fills = (0.0, float("nan"))[: len(sets)]
            outs = teacher_scores_prefix_cached(
                self.hooks.model, t.input_ids[i, :n], teacher.spans[i], sets, fill=fills, top_k=(top_k,)
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
