"""Advantage estimators of the GRPO family: per-turn credits, trajectory scores, group z-scores.

Every output is float32. Group ids (``group_ids``, ``gen_uids``) may be an integer tensor ``[B]`` or any
sequence of hashable ids such as prompt uid strings.

Design decisions that differ from the reference (docs/decisions.md A8):
- ``"sum"`` is a real sum; the reference's "Sum" was a rounded mean, available here as ``"mean"``.
- Nothing is rounded (the reference rounded EM credits and mean scores to 4 decimals).
- Credits act as non-negative *shares* of the trajectory's z-score: tokens get ``z·|c|/mean|c|``. For
  credits of one sign this is exactly the reference's ``c·z·n/Σc``; with mixed signs the reference could
  divide by a sum near zero or flip the sign of every token, this form cannot.
- All-zero credits fall back to spreading ``z`` evenly (``zero_credit="uniform"``) so failed trajectories
  are still pushed down; ``"none"`` keeps the reference's zeros.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from mimesis_pl.checks import check_choice
from mimesis_pl.spans import TurnSpan

CREDIT_METHODS = ("equalized", "r2g", "em")
SCORE_METHODS = ("mean", "sum", "r2g")
ZERO_CREDIT_MODES = ("uniform", "none")

GroupIds = Tensor | Sequence[Hashable]

# EM maps a reward in [0, 1] onto a credit in [0.5, 1]; this constant makes r = 1 land exactly on 1.
_EM_NORMALISER = 1.0 - math.exp(-2.0)


def _check_gamma(gamma: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma={gamma!r} must lie in [0, 1]")


def _check_eps(eps: float) -> None:
    if not eps > 0.0:
        raise ValueError(f"eps={eps!r} must be > 0")


def _rewards_1d(turn_rewards: Tensor | Sequence[float]) -> Tensor:
    rewards = torch.as_tensor(turn_rewards, dtype=torch.float32)
    if rewards.dim() != 1:
        raise ValueError(f"turn_rewards must be 1-D [N]; got shape {tuple(rewards.shape)}")
    return rewards


def _pad_rewards(turn_rewards: Sequence[Sequence[float]], device: torch.device) -> tuple[Tensor, Tensor]:
    """Ragged per-turn rewards → (rewards [B, N] float32 zero-padded, n_turns [B] long); N ≥ 1."""
    lengths = [len(r) for r in turn_rewards]
    width = max([1, *lengths])
    padded = [list(map(float, r)) + [0.0] * (width - len(r)) for r in turn_rewards]
    rewards = torch.tensor(padded, dtype=torch.float32, device=device).reshape(len(lengths), width)
    return rewards, torch.tensor(lengths, dtype=torch.long, device=device)


def _discount_matrix(n: int, gamma: float, device: torch.device) -> Tensor:
    """[N, N] float32 with D[t, k] = γ^(k−t) for k ≥ t, else 0."""
    t = torch.arange(n, device=device)
    offset = t[None, :] - t[:, None]
    # Negative exponents are masked out, but γ = 0 would turn them into inf first, hence the clamp.
    powers = torch.pow(torch.tensor(gamma, dtype=torch.float32, device=device), offset.clamp_min(0))
    return torch.where(offset >= 0, powers, torch.zeros_like(powers))


def _credits_padded(rewards: Tensor, n_turns: Tensor, method: str, gamma: float) -> Tensor:
    """rewards [B, N] (zero beyond n_turns) → credits [B, N] float32, zero beyond n_turns."""
    valid = torch.arange(rewards.shape[1], device=rewards.device)[None, :] < n_turns[:, None]
    if method == "equalized":
        credits = torch.ones_like(rewards)
    elif method == "r2g":
        # c[b, t] = Σ_k D[t, k]·r[b, k]; zero padding after the last turn adds nothing.
        credits = rewards @ _discount_matrix(rewards.shape[1], gamma, rewards.device).T
    else:
        credits = 0.5 + 0.5 * (1.0 - torch.exp(-2.0 * rewards)) / _EM_NORMALISER
    return credits * valid


def _scores_padded(rewards: Tensor, n_turns: Tensor, method: str, gamma: float) -> Tensor:
    """rewards [B, N] (zero beyond n_turns) → scores [B] float32."""
    if method == "sum":
        return rewards.sum(dim=1)
    if method == "mean":
        return rewards.sum(dim=1) / n_turns.clamp_min(1)
    powers = torch.pow(
        torch.tensor(gamma, dtype=torch.float32, device=rewards.device),
        torch.arange(rewards.shape[1], device=rewards.device),
    )
    return (rewards * powers).sum(dim=1)


def turn_credits(turn_rewards: Tensor | Sequence[float], method: str, gamma: float = 0.8) -> Tensor:
    """Credit of each assistant turn of one trajectory.

    Args:
        turn_rewards: [N] rewards r_t of the N turns.
        method: ``"equalized"`` (c_t = 1), ``"r2g"`` (c_t = Σ_{k≥t} γ^(k−t) r_k) or ``"em"``
            (c_t = 0.5 + 0.5·(1 − e^(−2 r_t)) / (1 − e^(−2)), maps [0, 1] onto [0.5, 1]).
        gamma: per-turn discount in [0, 1], used by ``"r2g"``.

    Returns:
        [N] float32 credits.
    """
    check_choice("method", method, CREDIT_METHODS)
    _check_gamma(gamma)
    rewards = _rewards_1d(turn_rewards)
    n_turns = torch.tensor([rewards.numel()])
    padded = torch.zeros(1, max(1, rewards.numel()))
    padded[0, : rewards.numel()] = rewards
    return _credits_padded(padded, n_turns, method, gamma)[0, : rewards.numel()]


def trajectory_score(turn_rewards: Tensor | Sequence[float], method: str, gamma: float = 0.8) -> Tensor:
    """Scalar score S of one trajectory from its per-turn rewards.

    Args:
        turn_rewards: [N] rewards r_t.
        method: ``"mean"`` (mean_t r_t, 0 with no turns), ``"sum"`` (Σ_t r_t) or ``"r2g"`` (Σ_t γ^t r_t).
        gamma: per-turn discount in [0, 1], used by ``"r2g"``.

    Returns:
        0-dim float32 tensor.
    """
    check_choice("method", method, SCORE_METHODS)
    _check_gamma(gamma)
    rewards = _rewards_1d(turn_rewards)
    padded = torch.zeros(1, max(1, rewards.numel()))
    padded[0, : rewards.numel()] = rewards
    return _scores_padded(padded, torch.tensor([rewards.numel()]), method, gamma)[0]


def _dense_ids(ids: GroupIds, batch: int, name: str, device: torch.device) -> Tensor:
    """Map arbitrary ids [B] onto 0..G−1 (long [B]) in order of first appearance."""
    if isinstance(ids, Tensor):
        if ids.dim() != 1 or ids.numel() != batch or ids.is_floating_point():
            raise ValueError(f"{name} must be an integer tensor of shape [{batch}]; got {ids.dtype} {tuple(ids.shape)}")
        return torch.unique(ids, return_inverse=True)[1].to(device)
    if len(ids) != batch:
        raise ValueError(f"{name} has {len(ids)} entries; expected one per trajectory ({batch})")
    table: dict[Hashable, int] = {}
    dense = [table.setdefault(i, len(table)) for i in ids]
    return torch.tensor(dense, dtype=torch.long, device=device)


def _group_zscores(
    values: Tensor, members: Tensor, groups: Tensor, n_groups: int, norm_by_std: bool, eps: float
) -> Tensor:
    """z-score of each value against the statistics of its group, computed over `members` only.

    values [B] float32; members [M] long (rows that count towards the statistics); groups [B] long in
    0..n_groups−1. A group with one member has μ = 0, σ = 1 (no baseline); σ is unbiased.
    """
    member_values, member_groups = values[members], groups[members]
    count = torch.bincount(member_groups, minlength=n_groups).to(values.dtype)
    total = torch.zeros(n_groups, dtype=values.dtype, device=values.device).index_add_(0, member_groups, member_values)
    mean = total / count.clamp_min(1)
    # Two passes (mean, then squared deviations) keep the variance accurate when scores are large.
    sq_dev = torch.zeros_like(total).index_add_(0, member_groups, (member_values - mean[member_groups]) ** 2)
    std = torch.sqrt(sq_dev / (count - 1).clamp_min(1))
    single = count <= 1
    mean = torch.where(single, torch.zeros_like(mean), mean)
    std = torch.where(single, torch.ones_like(std), std)
    centred = values - mean[groups]
    return centred / (std[groups] + eps) if norm_by_std else centred


def grpo_outcome_advantages(scores: Tensor, group_ids: GroupIds, norm_by_std: bool = True, eps: float = 1e-6) -> Tensor:
    """Plain GRPO: each trajectory's score as a z-score within its prompt group.

    Args:
        scores: [B] trajectory scores.
        group_ids: [B] prompt group of each trajectory.
        norm_by_std: divide by the group's unbiased std (+ eps); otherwise only subtract the mean.
        eps: added to σ.

    Returns:
        [B] float32 advantages. A group of one gets μ = 0, σ = 1.
    """
    _check_eps(eps)
    scores = torch.as_tensor(scores, dtype=torch.float32)
    if scores.dim() != 1:
        raise ValueError(f"scores must be 1-D [B]; got shape {tuple(scores.shape)}")
    groups = _dense_ids(group_ids, scores.numel(), "group_ids", scores.device)
    n_groups = int(groups.max()) + 1 if groups.numel() else 0
    members = torch.arange(scores.numel(), device=scores.device)
    return _group_zscores(scores, members, groups, n_groups, norm_by_std, eps)


def turn_index_from_spans(
    turn_spans: Sequence[Sequence[TurnSpan]], prompt_lens: Sequence[int], response_length: int
) -> Tensor:
    """The ``turn_index`` input of `grpo_multiturn_advantages`, from each trajectory's turn spans.

    Args:
        turn_spans: B lists of `TurnSpan` in absolute coordinates of each trajectory's sequence.
        prompt_lens: B prompt lengths; response position i is absolute position prompt_len + i.
        response_length: L, the padded response length of the batch.

    Returns:
        [B, L] long: turn t on turn t's generated tokens, −1 on every other token.
    """
    if len(prompt_lens) != len(turn_spans):
        raise ValueError(f"prompt_lens has {len(prompt_lens)} entries; turn_spans has {len(turn_spans)}")
    turn_index = torch.full((len(turn_spans), response_length), -1, dtype=torch.long)
    for b, (spans, prompt_len) in enumerate(zip(turn_spans, prompt_lens)):
        for t, span in enumerate(spans):
            low, high = span.start - prompt_len, span.end - prompt_len
            if low < 0 or high > response_length:
                raise ValueError(
                    f"turn_spans[{b}][{t}] = {span} lies outside the response "
                    f"[{prompt_len}, {prompt_len + response_length})"
                )
            turn_index[b, low:high] = t
    return turn_index


def _checked_turn_rewards(turn_index: Tensor, turn_rewards: Sequence[Sequence[float]]) -> tuple[Tensor, Tensor]:
    """Validate ``turn_index [B, T]`` against the ragged ``turn_rewards``; return them padded (`_pad_rewards`)."""
    if turn_index.dim() != 2 or turn_index.is_floating_point():
        raise ValueError(
            f"turn_index must be an integer tensor [B, T]; got {turn_index.dtype} {tuple(turn_index.shape)}"
        )
    batch = turn_index.shape[0]
    if len(turn_rewards) != batch:
        raise ValueError(f"turn_rewards has {len(turn_rewards)} trajectories; turn_index has {batch} rows")
    rewards, n_turns = _pad_rewards(turn_rewards, turn_index.device)
    if turn_index.numel():
        first_turn, last_turn = torch.aminmax(turn_index, dim=1)  # one pass over [B, T]
        if int(first_turn.min()) < -1:
            raise ValueError("turn_index must be −1 (not generated) or a turn number ≥ 0")
        bad = torch.nonzero(last_turn >= n_turns).flatten()
        if bad.numel():
            b = int(bad[0])
            raise ValueError(
                f"turn_index row {b} has tokens of turn {int(last_turn[b])} but turn_rewards[{b}] "
                f"holds only {int(n_turns[b])} rewards"
            )
    return rewards, n_turns


def grpo_multiturn_advantages(
    turn_index: Tensor,
    turn_rewards: Sequence[Sequence[float]],
    group_ids: GroupIds,
    gamma: float = 0.8,
    credit: str = "r2g",
    score: str = "r2g",
    norm_by_std: bool = True,
    eps: float = 1e-6,
    zero_credit: str = "uniform",
) -> Tensor:
    """Multi-turn GRPO: a group z-score per trajectory, shared among its turns in proportion to credit.

    Args:
        turn_index: [B, T] integer; for every generated token the assistant turn it belongs to
            (0-based), −1 for every other token (prompt, tool/user replies, headers, padding).
        turn_rewards: B lists of per-turn rewards; list b needs one reward per turn that appears in
            ``turn_index[b]`` (turns without tokens, e.g. truncated ones, may have rewards too).
        group_ids: [B] prompt group of each trajectory.
        gamma: per-turn discount in [0, 1] for ``"r2g"`` credits and scores.
        credit: turn credit method, see `turn_credits`.
        score: trajectory score method, see `trajectory_score`.
        norm_by_std, eps: as in `grpo_outcome_advantages`.
        zero_credit: what a trajectory whose credits are all zero gets: ``"uniform"`` puts z on every
            generated token, ``"none"`` gives zeros.

    Returns:
        [B, T] float32 advantages, zero where ``turn_index < 0``. Over the tokens with non-zero credit
        the mean advantage equals the trajectory's z-score, whatever its number of turns or tokens.
    """
    check_choice("credit", credit, CREDIT_METHODS)
    check_choice("score", score, SCORE_METHODS)
    check_choice("zero_credit", zero_credit, ZERO_CREDIT_MODES)
    _check_gamma(gamma)
    _check_eps(eps)
    rewards, n_turns = _checked_turn_rewards(turn_index, turn_rewards)
    batch, device = turn_index.shape[0], turn_index.device
    groups = _dense_ids(group_ids, batch, "group_ids", device)
    n_groups = int(groups.max()) + 1 if batch else 0
    scores = _scores_padded(rewards, n_turns, score, gamma)
    z = _group_zscores(scores, torch.arange(batch, device=device), groups, n_groups, norm_by_std, eps)

    credits = _credits_padded(rewards, n_turns, credit, gamma).abs()
    # A leading zero column lets index turn_index + 1 send every −1 token to zero credit in the gather
    # itself, saving a masking pass over [B, T].
    credits = torch.cat([torch.zeros_like(credits[:, :1]), credits], dim=1)
    weight = credits.gather(1, turn_index.long() + 1)
    total = weight.sum(dim=1)
    n_credited = (weight > 0).sum(dim=1)
    has_credit = total > 0
    # z·n/Σ|c| makes the mean over credited tokens exactly z; the clamp only guards the rows that
    # `has_credit` discards anyway.
    scale = torch.where(has_credit, z * n_credited / total.clamp_min(torch.finfo(torch.float32).tiny), 0.0)
    advantages = weight.mul_(scale[:, None])
    uncredited = torch.nonzero(~has_credit).flatten()
    if zero_credit == "uniform" and uncredited.numel():
        generated = (turn_index[uncredited] >= 0).to(torch.float32)
        advantages[uncredited] = z[uncredited, None] * generated
    return advantages


def foldgrpo_advantages(
    scores: Tensor,
    group_ids: GroupIds,
    gen_uids: GroupIds,
    response_mask: Tensor,
    norm_by_std: bool = True,
    eps: float = 1e-6,
    singleton: str = "zero",
) -> Tensor:
    """FoldGRPO: GRPO where one rollout may yield several rows; group statistics count rollouts.

    Args:
        scores: [B] score of each row.
        group_ids: [B] prompt group of each row.
        gen_uids: [B] rollout id of each row; rows of one rollout share it. Only the first row of
            each (group, gen_uid) pair enters μ and σ, so a rollout folded into many rows does not
            outweigh its siblings.
        response_mask: [B, T] 1 on trained tokens.
        norm_by_std, eps: as in `grpo_outcome_advantages`.
        singleton: a group with a single rollout has no baseline: ``"zero"`` gives it advantage 0
            (docs/decisions.md S19: the reference fed the raw reward in as advantage);
            ``"raw"`` keeps μ = 0, σ = 1 as `grpo_outcome_advantages` does.

    Returns:
        [B, T] float32: each row's own z-score on its masked tokens.
    """
    _check_eps(eps)
    check_choice("singleton", singleton, ("zero", "raw"))
    scores = torch.as_tensor(scores, dtype=torch.float32)
    if scores.dim() != 1:
        raise ValueError(f"scores must be 1-D [B]; got shape {tuple(scores.shape)}")
    batch, device = scores.numel(), scores.device
    if response_mask.dim() != 2 or response_mask.shape[0] != batch:
        raise ValueError(f"response_mask must be [B={batch}, T]; got shape {tuple(response_mask.shape)}")
    groups = _dense_ids(group_ids, batch, "group_ids", device)
    rollouts = _dense_ids(gen_uids, batch, "gen_uids", device)
    if batch == 0:
        return torch.zeros(response_mask.shape, dtype=torch.float32, device=device)
    pair = torch.unique(groups * (int(rollouts.max()) + 1) + rollouts, return_inverse=True)[1]
    positions = torch.arange(batch, device=device)
    first_row = torch.full((int(pair.max()) + 1,), batch, dtype=torch.long, device=device)
    first_row.scatter_reduce_(0, pair, positions, reduce="amin")
    n_groups = int(groups.max()) + 1
    z = _group_zscores(scores, first_row, groups, n_groups, norm_by_std, eps)
    if singleton == "zero":
        rollouts_per_group = torch.bincount(groups[first_row], minlength=n_groups)
        z = torch.where(rollouts_per_group[groups] <= 1, torch.zeros_like(z), z)
    return z[:, None] * response_mask.to(torch.float32)


def grpo_turn_advantages(
    turn_index: Tensor,
    turn_rewards: Sequence[Sequence[float]],
    group_ids: GroupIds,
    gamma: float = 0.8,
    norm_by_std: bool = True,
    eps: float = 1e-6,
) -> Tensor:
    """Turn-level GRPO: each turn's discounted return, z-scored against the same turn of its group.

    Turn ``t`` of trajectory ``b`` gets ``(G[b,t] − μ[g,t]) / (σ[g,t] + eps)`` on every one of its tokens, with
    ``G[b,t] = Σ_{k≥t} γ^(k−t) r[b,k]`` and μ, σ (unbiased) taken over the trajectories of group ``g`` that
    have a turn ``t``. Unlike trajectory credits (`grpo_multiturn_advantages` with ``credit="r2g"``, where a
    turn after the last reward gets no credit; docs/decisions.md A8b), the turn that loses the reward (a broken
    tool call that ends the episode, say) is the one pushed down, and the turns before it are compared with the turns
    of their siblings at the same point. A turn that no sibling reached has no baseline and gets 0.

    Args:
        turn_index, turn_rewards, group_ids, gamma, norm_by_std, eps: as in `grpo_multiturn_advantages`.

    Returns:
        [B, T] float32 advantages, zero where ``turn_index < 0``.
    """
    _check_gamma(gamma)
    _check_eps(eps)
    rewards, n_turns = _checked_turn_rewards(turn_index, turn_rewards)
    batch, device = turn_index.shape[0], turn_index.device
    width = rewards.shape[1]
    returns = _credits_padded(rewards, n_turns, "r2g", gamma)  # [B, N]
    groups = _dense_ids(group_ids, batch, "group_ids", device)
    # One z-score per (group, turn) cell over the trajectories that took that turn.
    cells = (groups[:, None] * width + torch.arange(width, device=device)[None, :]).flatten()
    taken = (torch.arange(width, device=device)[None, :] < n_turns[:, None]).flatten()
    members = torch.nonzero(taken).flatten()
    n_cells = (int(groups.max()) + 1) * width if batch else 0
    z = _group_zscores(returns.flatten(), members, cells, n_cells, norm_by_std, eps)
    # A cell with one member has μ = 0, σ = 1 in _group_zscores; with no sibling there is no baseline: 0.
    count = torch.bincount(cells[members], minlength=n_cells)
    z = torch.where(count[cells] > 1, z, torch.zeros_like(z)) * taken
    z = torch.cat([torch.zeros(batch, 1, device=device), z.view(batch, width)], dim=1)
    return z.gather(1, turn_index.long() + 1)
