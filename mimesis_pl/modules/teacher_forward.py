"""The CSD teacher forward: the policy's own weights scoring packed teacher rows, without gradient."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from ..rl.teacher import PackedTeacherRows, gather_teacher_logprobs, teacher_logits_to_keep, token_logprobs_from_logits


@torch.no_grad()
def teacher_logprobs(
    model: torch.nn.Module, packed: PackedTeacherRows, chunk_rows: int = 4, fill: float = 0.0
) -> torch.Tensor:
    """``[B, L]`` teacher log-prob of every student token that has a row (``fill`` elsewhere).

    Rows are forwarded ``chunk_rows`` at a time and only the trailing logits the maps need are kept
    (``logits_to_keep``), so memory is ``chunk_rows × keep × V``, not ``R × W × V``.
    """
    device = next(model.parameters()).device
    keep = teacher_logits_to_keep(packed)
    if keep == 0:
        return torch.full(packed.teacher_mask.shape, fill, dtype=torch.float32, device=device)
    pieces = []
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
    return gather_teacher_logprobs(torch.cat(pieces), packed, fill=fill)


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


@torch.no_grad()
def teacher_logprobs_prefix_cached(
    model: torch.nn.Module, input_ids: torch.Tensor, spans, row_sets, fill=(0.0,)
) -> list[torch.Tensor]:
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

    Returns:
        one ``[L]`` float32 tensor per row set: the teacher's log-prob of each token that has a row.
    """
    device = next(model.parameters()).device
    length = input_ids.numel()
    outs = [torch.full((length,), f, dtype=torch.float32, device=device) for f in fill]
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


def _score_row(logits, suffix, span, row, out) -> None:
    """Write the teacher log-probs of ``span``'s sampled tokens (from its suffix forward) into ``out``."""
    hs = span.header_start
    note_len = row.numel() - span.end
    first = note_len + (span.start - hs)  # suffix index of the first sampled token; its logit is the one before
    n = span.end - span.start
    predicting = logits[first - 1 : first - 1 + n].float()
    targets = suffix[first : first + n]
    out[span.start : span.end] = predicting.gather(-1, targets[:, None]).squeeze(-1) - torch.logsumexp(
        predicting, dim=-1
    )
