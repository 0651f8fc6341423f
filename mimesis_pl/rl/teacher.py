"""Teacher rows for context self-distillation: build by token splicing, pack, gather log-probs back.

A teacher row for assistant turn t is the student's own token sequence with a coaching note spliced in
just before turn t's assistant header:

    input_ids[0:header_start] + note_ids + input_ids[header_start:end]

so the teacher sees exactly the context the student saw (earlier tool calls and reasoning included; the
reference re-rendered messages and lost them: docs/decisions.md A1) and scores the very tokens the student
generated. With a note that renders to no tokens the row is the student's prefix, token for token (the
null probe). Placebo rows are built by the same function with the placebo notes; gather them with
``fill=NaN`` so tokens whose placebo row was skipped fall back to the raw teacher in `csd_loss`.

Coordinates: "response coordinates" index the student's response ``input_ids[prompt_len:]``; position i
there is absolute position ``prompt_len + i``. "Row coordinates" index a teacher row (after packing: the
left-padded row).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from mimesis_pl.spans import TurnSpan


class TeacherRows(NamedTuple):
    """Teacher rows of one trajectory.

    rows: one long tensor [len_k] per accepted turn, in ascending turn order.
    index_map: [n_resp] long; for each response position, its position in its teacher row (0 if unmasked).
    row_idx: [n_resp] long; which row of ``rows`` holds it (0 if unmasked).
    teacher_mask: [n_resp] bool; True on the generated tokens of turns that got a row.
    skipped: rows dropped because they were longer than ``width``.
    row_turns: the turn number of each row.
    """

    rows: list[Tensor]
    index_map: Tensor
    row_idx: Tensor
    teacher_mask: Tensor
    skipped: int
    row_turns: list[int]


class PackedTeacherRows(NamedTuple):
    """All teacher rows of a batch, left-padded to one width W, with no empty padding rows.

    input_ids, attention_mask, position_ids: [R, W] long; R = number of real rows. Left padding puts
        every row's last token at column W−1, so one trailing logit window serves all rows; position_ids
        restart at 0 on each row's first real token so padding does not shift positions.
    index_map: [B, L] long; column of each student response token in its packed row (0 if unmasked).
    row_idx: [B, L] long; packed row of each student response token (0 if unmasked).
    teacher_mask: [B, L] bool; True where a teacher log-prob exists.
    row_trajectory: [R] long; trajectory (0..B−1) each row belongs to.
    """

    input_ids: Tensor
    attention_mask: Tensor
    position_ids: Tensor
    index_map: Tensor
    row_idx: Tensor
    teacher_mask: Tensor
    row_trajectory: Tensor


def _check_turns(turns: Sequence[TurnSpan], length: int, prompt_len: int) -> None:
    previous_end = 0
    for k, span in enumerate(turns):
        if not isinstance(span, TurnSpan):
            raise ValueError(f"turns[{k}] is {type(span).__name__}; expected TurnSpan")
        if span.start < max(1, prompt_len) or span.end > length:
            raise ValueError(
                f"turns[{k}] = {span} must generate tokens inside the response "
                f"[{max(1, prompt_len)}, {length}) of input_ids"
            )
        if span.header_start < previous_end:
            raise ValueError(f"turns[{k}] = {span} overlaps the previous turn, which ends at {previous_end}")
        previous_end = span.end


def build_teacher_rows(
    input_ids: Tensor | Sequence[int],
    turns: Sequence[TurnSpan],
    notes: Mapping[int, str | None],
    note_renderer: Callable[[str], Sequence[int]],
    width: int,
    *,
    prompt_len: int,
) -> TeacherRows:
    """Build one teacher row per noted turn by splicing the rendered note into the student's tokens.

    Args:
        input_ids: [L] the student's full token sequence (prompt + response).
        turns: every assistant turn of the trajectory, in order (turn t is ``turns[t]``).
        notes: coaching note per turn number; turns without a key, or with an empty/None note, get no row.
        note_renderer: note text → token ids of the note rendered as one complete user message.
        width: the longest row allowed; longer rows are skipped and counted.
        prompt_len: length of the prompt; the response (and the returned maps) start there.

    Returns:
        `TeacherRows`; ``index_map``, ``row_idx`` and ``teacher_mask`` are in response coordinates
        (length L − prompt_len).
    """
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    if ids.dim() != 1:
        raise ValueError(f"input_ids must be 1-D [L]; got shape {tuple(ids.shape)}")
    length = ids.numel()
    if not 0 <= prompt_len <= length:
        raise ValueError(f"prompt_len={prompt_len} must lie in [0, len(input_ids)={length}]")
    if width < 1:
        raise ValueError(f"width={width} must be ≥ 1")
    _check_turns(turns, length, prompt_len)
    for t in notes:
        if not (isinstance(t, int) and 0 <= t < len(turns)):
            raise ValueError(f"notes has key {t!r}; keys must be turn numbers in [0, {len(turns)})")

    n_resp = length - prompt_len
    index_map = torch.zeros(n_resp, dtype=torch.long)
    row_idx = torch.zeros(n_resp, dtype=torch.long)
    teacher_mask = torch.zeros(n_resp, dtype=torch.bool)
    rows: list[Tensor] = []
    row_turns: list[int] = []
    skipped = 0
    for t in sorted(notes):
        note = notes[t]
        if not note:
            continue
        span = turns[t]
        note_ids = torch.as_tensor(list(note_renderer(note)), dtype=torch.long)
        if span.end + note_ids.numel() > width:
            skipped += 1
            continue
        row = torch.cat([ids[: span.header_start], note_ids, ids[span.header_start : span.end]])
        # Splicing shifts every token at or after header_start by the note's length.
        positions = torch.arange(span.start, span.end)
        index_map[positions - prompt_len] = positions + note_ids.numel()
        row_idx[span.start - prompt_len : span.end - prompt_len] = len(rows)
        teacher_mask[span.start - prompt_len : span.end - prompt_len] = True
        rows.append(row)
        row_turns.append(t)
    return TeacherRows(rows, index_map, row_idx, teacher_mask, skipped, row_turns)


def pack_teacher_rows(trajectories: Sequence[TeacherRows], response_length: int, pad_id: int) -> PackedTeacherRows:
    """Stack the rows of B trajectories into left-padded tensors and move their maps onto them.

    Only real rows are packed (a trajectory with no row contributes none) and the width is the longest
    row, not a fixed budget. To score real and placebo rows in one forward, pack both lists together and
    split the maps afterwards.

    Args:
        trajectories: B `TeacherRows`, each with maps of length ≤ ``response_length``.
        response_length: L, the padded response length of the student batch.
        pad_id: token id used for left padding.

    Returns:
        `PackedTeacherRows` with maps of shape [B, L].
    """
    for b, tr in enumerate(trajectories):
        if tr.index_map.numel() > response_length:
            raise ValueError(
                f"trajectories[{b}] has {tr.index_map.numel()} response positions; "
                f"response_length={response_length} is shorter"
            )
    rows = [row for tr in trajectories for row in tr.rows]
    n_rows = len(rows)
    lengths = torch.tensor([row.numel() for row in rows], dtype=torch.long)
    width = int(lengths.max()) if n_rows else 0
    pad = width - lengths
    input_ids = torch.full((n_rows, width), pad_id, dtype=torch.long)
    # One slice copy per row (not per token); measured faster than a single scatter of all tokens.
    for r, row in enumerate(rows):
        input_ids[r, int(pad[r]) :] = row
    columns = torch.arange(width)[None, :]
    attention_mask = (columns >= pad[:, None]).to(torch.long)
    position_ids = (columns - pad[:, None]).clamp_min_(0)

    batch = len(trajectories)
    rows_per_traj = torch.tensor([len(tr.rows) for tr in trajectories], dtype=torch.long)
    row_offset = torch.cumsum(rows_per_traj, 0) - rows_per_traj
    row_trajectory = torch.repeat_interleave(torch.arange(batch), rows_per_traj)

    def stack(values: list[Tensor], dtype: torch.dtype) -> Tensor:
        out = torch.zeros((batch, response_length), dtype=dtype)
        if batch:
            padded = pad_sequence([v.to(dtype) for v in values], batch_first=True)
            out[:, : padded.shape[1]] = padded
        return out

    teacher_mask = stack([tr.teacher_mask for tr in trajectories], torch.bool)
    global_row = (stack([tr.row_idx for tr in trajectories], torch.long) + row_offset[:, None]) * teacher_mask
    row_pad = pad if n_rows else torch.zeros(1, dtype=torch.long)
    index_map = (stack([tr.index_map for tr in trajectories], torch.long) + row_pad[global_row]) * teacher_mask
    return PackedTeacherRows(
        input_ids, attention_mask, position_ids, index_map, global_row, teacher_mask, row_trajectory
    )


def teacher_logits_to_keep(packed: PackedTeacherRows) -> int:
    """Number P of trailing positions whose logits the teacher forward must keep.

    Column W−P is the logit predicting the earliest masked token, so everything before it can be skipped
    (``logits_to_keep=P`` in Hugging Face models). Returns 0 when nothing is masked.
    """
    if not bool(packed.teacher_mask.any()):
        return 0
    earliest = int(packed.index_map[packed.teacher_mask].min())
    return packed.input_ids.shape[1] - earliest + 1


def token_logprobs_from_logits(logits: Tensor, input_ids: Tensor) -> Tensor:
    """Log-prob of each token under the logits of the position before it, for a trailing window.

    Args:
        logits: [R, P, V] model outputs at the last P positions W−P..W−1 of each row.
        input_ids: [R, W] the rows that were forwarded.

    Returns:
        [R, P] float32; column c is log p(input_ids[:, W−P+c] | tokens before it); column 0 is NaN
        because its predicting logit lies outside the window.
    """
    if logits.dim() != 3 or input_ids.dim() != 2 or logits.shape[0] != input_ids.shape[0]:
        raise ValueError(
            f"logits must be [R, P, V] and input_ids [R, W] with the same R; got "
            f"{tuple(logits.shape)} and {tuple(input_ids.shape)}"
        )
    n_rows, keep = logits.shape[:2]
    if keep > input_ids.shape[1]:
        raise ValueError(f"logits keeps {keep} positions but input_ids has only {input_ids.shape[1]}")
    out = torch.full((n_rows, keep), float("nan"), dtype=torch.float32, device=logits.device)
    if keep > 1:
        predicting = logits[:, :-1].to(torch.float32)
        targets = input_ids[:, input_ids.shape[1] - keep + 1 :].unsqueeze(-1)
        # gather − logsumexp avoids materialising a full [R, P, V] log-softmax.
        out[:, 1:] = predicting.gather(-1, targets).squeeze(-1) - torch.logsumexp(predicting, dim=-1)
    return out


def token_topk_from_logits(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The K most likely next tokens and their log-probs (normalised over the whole vocabulary), for a trailing window.

    Args:
        logits: [R, P, V] model outputs at the last P positions W−P..W−1 of each row.
        k: how many tokens per position (at most V).

    Returns:
        ``(ids, logprobs)``, [R, P, K] long and float32, aligned like `token_logprobs_from_logits`: column c is the
        distribution of the token at W−P+c (from the logit before it); column 0 has ids 0 and NaN log-probs.
    """
    if logits.dim() != 3 or not 1 <= k <= logits.shape[-1]:
        raise ValueError(f"logits must be [R, P, V] with 1 ≤ k ≤ V; got {tuple(logits.shape)} and k={k}")
    n_rows, keep = logits.shape[:2]
    ids = torch.zeros(n_rows, keep, k, dtype=torch.long, device=logits.device)
    logprobs = torch.full((n_rows, keep, k), float("nan"), dtype=torch.float32, device=logits.device)
    if keep > 1:
        predicting = logits[:, :-1].to(torch.float32)
        values, ids[:, 1:] = predicting.topk(k, dim=-1)
        logprobs[:, 1:] = values - torch.logsumexp(predicting, dim=-1, keepdim=True)
    return ids, logprobs


def gather_teacher_logprobs(token_logprobs: Tensor, packed: PackedTeacherRows, fill: float = 0.0) -> Tensor:
    """Map teacher log-probs of packed rows back onto the student's response positions.

    Args:
        token_logprobs: [R, P] as returned by `token_logprobs_from_logits` (any P with
            ``teacher_logits_to_keep(packed) ≤ P ≤ W``; P = W is the full row), or [R, P, K] (e.g. the ids or
            log-probs of `token_topk_from_logits`).
        packed: the `PackedTeacherRows` the log-probs were computed on.
        fill: value where there is no teacher row (use NaN for placebo log-probs).

    Returns:
        [B, L] (or [B, L, K]) in the dtype of ``token_logprobs``: the teacher's value at each student token.
    """
    n_rows, width = packed.input_ids.shape
    if token_logprobs.dim() not in (2, 3) or token_logprobs.shape[0] != n_rows or token_logprobs.shape[1] > width:
        raise ValueError(
            f"token_logprobs must be [R={n_rows}, P ≤ {width}] or [R, P, K]; got {tuple(token_logprobs.shape)}"
        )
    keep = token_logprobs.shape[1]
    device = token_logprobs.device
    shape = (*packed.teacher_mask.shape, *token_logprobs.shape[2:])
    out = torch.full(shape, fill, dtype=token_logprobs.dtype, device=device)
    # Work on the masked positions only: typically a small share of the [B, L] batch.
    b_idx, i_idx = packed.teacher_mask.to(device).nonzero(as_tuple=True)
    rows = packed.row_idx.to(device)[b_idx, i_idx]
    columns = packed.index_map.to(device)[b_idx, i_idx] - (width - keep)
    if bool((columns < 1).any()):
        raise ValueError(
            f"token_logprobs covers the last {keep} positions; these rows need "
            f"{teacher_logits_to_keep(packed)} (see teacher_logits_to_keep)"
        )
    out[b_idx, i_idx] = token_logprobs[rows, columns]
    return out


@dataclass
class TeacherBatch:
    """CSD teacher rows of one step, aligned with ``experience.trained`` (the tensor rows' order).

    Args:
        real: per trained trajectory, its teacher rows (one per coached turn).
        placebo: per trained trajectory, its placebo rows (``None``: placebo off).
        metrics: the coach's counters (``coach/*``) and ``csd/coached_token_fraction``; logged with the update.
        spans: each trained trajectory's ``TurnSpan`` list (for the prefix-cached teacher forward).
    """

    real: list[TeacherRows]
    placebo: list[TeacherRows] | None
    metrics: dict[str, float] = field(default_factory=dict)
    spans: list[list[Any]] = field(default_factory=list)
