"""The CSD teacher forward: the policy's own weights scoring packed teacher rows, without gradient."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import torch

from .teacher import (
    PackedTeacherRows,
    gather_teacher_logprobs,
    teacher_logits_to_keep,
    token_logprobs_from_logits,
    token_topk_from_logits,
)


class TeacherScores(NamedTuple):
    """What a teacher forward returns, at each student token that has a row (absolute positions).

    logprobs: ``[..., L]`` float32, the teacher's log-prob of the sampled token (``fill`` without a row).
    topk_ids, topk_logprobs: ``[..., L, K]`` long / float32, the teacher's K most likely tokens there and their
        log-probs (normalised over the whole vocabulary; ids 0 and log-probs 0 without a row); ``None`` at K = 0.
    """

    logprobs: torch.Tensor
    topk_ids: torch.Tensor | None = None
    topk_logprobs: torch.Tensor | None = None


@torch.no_grad()
def teacher_scores(
    model: torch.nn.Module, packed: PackedTeacherRows, chunk_rows: int = 4, fill: float = 0.0, top_k: int = 0
) -> TeacherScores:
    """``[B, L]`` teacher log-prob of every student token that has a row (``fill`` elsewhere), and with ``top_k``
    the teacher's top-k there (:class:`TeacherScores`).

    Rows are forwarded ``chunk_rows`` at a time and only the trailing logits the maps need are kept
    (``logits_to_keep``), so memory is ``chunk_rows × keep × V``, not ``R × W × V``; the top-k adds
    ``R × keep × K``.
    """
    device = next(model.parameters()).device
    keep = teacher_logits_to_keep(packed)
    if keep == 0:
        empty = torch.full(packed.teacher_mask.shape, fill, dtype=torch.float32, device=device)
        return _with_topk(empty, None, None, top_k)
    pieces, top_ids, top_lps = [], [], []
    for start in range(0, packed.input_ids.shape[0], chunk_rows):
        ids = packed.input_ids[start : start + chunk_rows].to(device)
        logits = model(
            input_ids=ids,
            attention_mask=packed.attention_mask[start : start + chunk_rows].to(device),
            position_ids=packed.position_ids[start : start + chunk_rows].to(device),
            logits_to_keep=keep,
            use_cache=False,
        ).logits
        pieces.append(token_logprobs_from_logits(logits, ids))
        if top_k:
            chunk_ids, chunk_lps = token_topk_from_logits(logits, top_k)
            top_ids.append(chunk_ids)
            top_lps.append(chunk_lps)
    logprobs = gather_teacher_logprobs(torch.cat(pieces), packed, fill=fill)
    if not top_k:
        return TeacherScores(logprobs)
    return TeacherScores(
        logprobs,
        gather_teacher_logprobs(torch.cat(top_ids), packed, fill=0),
        gather_teacher_logprobs(torch.cat(top_lps), packed, fill=0.0),
    )


def _with_topk(logprobs: torch.Tensor, ids, lps, top_k: int) -> TeacherScores:
    """``logprobs`` with the top-k tensors, or their empty fill (ids 0, log-probs 0) where none were computed."""
    if not top_k:
        return TeacherScores(logprobs)
    shape = (*logprobs.shape, top_k)
    if ids is None:
        ids = torch.zeros(shape, dtype=torch.long, device=logprobs.device)
        lps = torch.zeros(shape, dtype=torch.float32, device=logprobs.device)
    return TeacherScores(logprobs, ids, lps)


def teacher_logprobs(
    model: torch.nn.Module, packed: PackedTeacherRows, chunk_rows: int = 4, fill: float = 0.0
) -> torch.Tensor:
    """``[B, L]`` teacher log-prob of every student token that has a row (``fill`` elsewhere); see
    :func:`teacher_scores`."""
    return teacher_scores(model, packed, chunk_rows, fill).logprobs


def check_no_dropout(config, where: str = "model config") -> None:
    """Refuse a model with non-zero dropout: teacher and student must see identical forwards."""
    seen = set()

    def walk(cfg, path: str) -> None:
        if id(cfg) in seen:
            return
        seen.add(id(cfg))
        for name, value in vars(cfg).items():
            if "dropout" in name and isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0:
                raise ValueError(
                    f"{where}: {path}{name} = {value}; CSD scores the same tokens twice with the same weights, "
                    "so dropout must be 0 (set it to 0.0 in the model config)"
                )
            if name.endswith("_config") and value is not None and hasattr(value, "__dict__"):
                walk(value, f"{path}{name}.")

    walk(config, "")


@contextmanager
def prefix_cache_off_checkpointing(model: torch.nn.Module) -> Iterator[None]:
    """Gradient checkpointing off for a no-grad pass, restored afterwards (docs/decisions.md A60).

    In train mode transformers' checkpointed layers drop ``use_cache`` and ``past_key_values``, so a
    KV cache is never filled nor read. A no-grad pass stores no activations, so checkpointing buys
    nothing there; turning the per-module flags off (not ``model.train(False)``: the teacher runs in
    the student's mode) lets the prefix cache work and leaves the weights and the mode untouched.
    """
    switched = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True]
    for m in switched:
        m.gradient_checkpointing = False
    try:
        yield
    finally:
        for m in switched:
            m.gradient_checkpointing = True


def _crop_to(cache, length: int) -> None:
    remove = cache.get_seq_length() - length
    if remove > 0:
        cache.crop(-remove)  # transformers >= 5.16: a negative count removes that many tokens


def teacher_logprobs_prefix_cached(
    model: torch.nn.Module, input_ids: torch.Tensor, spans, row_sets, fill=(0.0,)
) -> list[torch.Tensor]:
    """One ``[L]`` teacher log-prob tensor per row set; see :func:`teacher_scores_prefix_cached`."""
    return [s.logprobs for s in teacher_scores_prefix_cached(model, input_ids, spans, row_sets, fill)]


@torch.no_grad()
def teacher_scores_prefix_cached(
    model: torch.nn.Module, input_ids: torch.Tensor, spans, row_sets, fill=(0.0,), top_k: Sequence[int] = ()
) -> list[TeacherScores]:
    """Teacher log-probs by reusing the KV cache of the student's own prefix.

    Every teacher row is ``ids[:header_start] + note + ids[header_start:end]``: its prefix is the
    student's tokens, so one no-grad forward of the trajectory up to its latest coached header gives
    the keys/values every row starts from; each row then forwards only its note and turn. Rows are
    run from the latest header back, cropping the cache each time, so nothing is copied.

    Args:
        input_ids: ``[L]`` the trajectory's ids.
        spans: its ``TurnSpan`` list.
        row_sets: several ``TeacherRows`` of this trajectory (e.g. real and placebo) sharing the prefix.
        fill: the value for positions without a row, per row set (e.g. ``(0.0, nan)``).
        top_k: K per row set (missing or 0: no top-k), e.g. ``(20, 0)`` for the real rows only.

    Returns:
        one :class:`TeacherScores` per row set: ``[L]`` log-probs of each token that has a row, ``[L, K]`` top-k.
    """
    device = next(model.parameters()).device
    length = input_ids.numel()
    ks = [top_k[k] if k < len(top_k) else 0 for k in range(len(fill))]
    outs = [
        _with_topk(torch.full((length,), f, dtype=torch.float32, device=device), None, None, k)
        for f, k in zip(fill, ks)
    ]
    work = [(spans[turn], row, k) for k, rows in enumerate(row_sets) for turn, row in zip(rows.row_turns, rows.rows)]
    if not work:
        return outs
    work.sort(key=lambda w: -w[0].header_start)
    prefix_end = work[0][0].header_start
    ids = input_ids.to(device)
    with prefix_cache_off_checkpointing(model):
        cache = None
        if prefix_end > 0:
            cache = model(input_ids=ids[None, :prefix_end], use_cache=True).past_key_values
            _check_cache(cache, prefix_end)
        for span, row, k in work:
            hs = span.header_start
            if cache is not None:
                _crop_to(cache, hs)
            suffix = row[hs:].to(device)
            positions = torch.arange(hs, hs + suffix.numel(), device=device)[None]
            logits = model(
                input_ids=suffix[None], past_key_values=cache, position_ids=positions, use_cache=cache is not None
            ).logits[0]
            if cache is not None:
                _check_cache(cache, hs + suffix.numel())
            _score_row(logits, suffix, span, row, outs[k])
    return outs


def _check_cache(cache, length: int) -> None:
    """The prefix-cache contract: the cache holds exactly the positions forwarded so far, or we raise."""
    held = None if cache is None else cache.get_seq_length()
    if held != length:
        raise RuntimeError(
            f"teacher_mode 'prefix_cache': the model returned a prefix cache of {held} positions, expected "
            f"{length}; it would score the note and the turn without their prefix. Use "
            "model.init_args.csd.teacher_mode: packed for this model"
        )


def _score_row(logits, suffix, span, row, out: TeacherScores) -> None:
    """Write the teacher log-probs of ``span``'s sampled tokens (from its suffix forward) into ``out``, and its
    top-k there when ``out`` has top-k tensors."""
    hs = span.header_start
    note_len = row.numel() - span.end
    first = note_len + (span.start - hs)  # suffix index of the first sampled token; its logit is the one before
    n = span.end - span.start
    predicting = logits[first - 1 : first - 1 + n].float()
    targets = suffix[first : first + n]
    lse = torch.logsumexp(predicting, dim=-1)
    out.logprobs[span.start : span.end] = predicting.gather(-1, targets[:, None]).squeeze(-1) - lse
    if out.topk_ids is not None:
        values, ids = predicting.topk(out.topk_ids.shape[-1], dim=-1)
        out.topk_ids[span.start : span.end] = ids
        out.topk_logprobs[span.start : span.end] = values - lse[:, None]
