"""Off-policy correction of stale or mismatched rollouts as pure functions (decoupled PPO's behaviour weights).

Tokens sampled by a behaviour policy π_behav (the engine that generated them: weights some RL steps old under
``rollout.max_staleness``, or an inference engine's numerics) are trained as if sampled from the proximal policy
π_prox (the weights of the update's first pass). Each token's loss is weighted by w = π_prox / π_behav (AReaL's
``behav_imp_weight``, NeMo-RL's importance-sampling correction), so the expectation over behaviour samples equals
the one over proximal samples. w is detached, and truncated at a cap (``truncate``: verl's TIS) or zero above it
(``mask``: AReaL, prime-rl).

:func:`weight_gradient` applies w to a loss term without touching it: the log-probs it returns have the same values
and a gradient scaled by w per token, so for any loss whose token ``i`` reads only column ``i`` (the clipped PPO
term and every CSD estimator that reads the sampled token), the gradient equals that of the w-weighted per-token
loss. With w ≡ 1 the loss and its gradient are today's, bit for bit.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

BehaviourMode = Literal["truncate", "mask"]

# Beyond ±20 a log-ratio's exp overflows soon after; a weight that far out is at the cap anyway.
_LOG_RATIO_LIMIT = 20.0
_TINY = 1e-8


def behaviour_weights(
    prox_logprobs: Tensor, behav_logprobs: Tensor, mask: Tensor, *, cap: float, mode: BehaviourMode = "truncate"
) -> tuple[Tensor, dict[str, float]]:
    """Per-token ``w = π_prox / π_behav`` (detached, at least float32), truncated or masked at ``cap``.

    Args:
        prox_logprobs: ``[B, T]`` log-probs of the sampled tokens under the proximal policy.
        behav_logprobs: ``[B, T]`` the same tokens' log-probs under the policy that sampled them.
        mask: ``[B, T]`` 1 on trained tokens; w is 1 elsewhere, and the metrics count only masked tokens.
        cap: ``truncate``: w = min(w, cap); ``mask``: w = 0 where w > cap.
        mode: ``truncate`` or ``mask``.

    Returns:
        ``(w, metrics)``: ``behaviour_weight_mean`` (mean of the applied w), ``behaviour_weight_clipped_frac`` (share
        of tokens past the cap) and ``behaviour_kl`` (k3 estimate of KL(π_behav ‖ π_prox) from behaviour samples:
        mean of r − 1 − log r with r the raw ratio).
    """
    if prox_logprobs.shape != behav_logprobs.shape or prox_logprobs.shape != mask.shape:
        raise ValueError(
            f"behaviour_weights: prox {tuple(prox_logprobs.shape)}, behav {tuple(behav_logprobs.shape)} and "
            f"mask {tuple(mask.shape)} must have one shape"
        )
    if not cap >= 1.0:
        raise ValueError(f"behaviour weight cap={cap!r} must be >= 1 (model.init_args.ppo.behaviour_weight_cap)")
    if mode not in ("truncate", "mask"):
        raise ValueError(f"behaviour weight mode={mode!r} must be 'truncate' or 'mask'")
    dtype = torch.promote_types(prox_logprobs.dtype, torch.float32)
    with torch.no_grad():
        log_ratio = (prox_logprobs.to(dtype) - behav_logprobs.to(dtype)).clamp(-_LOG_RATIO_LIMIT, _LOG_RATIO_LIMIT)
        raw = torch.exp(log_ratio)
        over = raw > cap
        w = raw.clamp(max=cap) if mode == "truncate" else torch.where(over, torch.zeros_like(raw), raw)
        m = mask.to(dtype)
        w = torch.where(m > 0, w, torch.ones_like(w))
        n = m.sum().clamp(min=_TINY)
        metrics = {
            "behaviour_weight_mean": float((w * m).sum() / n),
            "behaviour_weight_clipped_frac": float((over.to(dtype) * m).sum() / n),
            "behaviour_kl": float(((raw - 1.0 - log_ratio) * m).sum() / n),
        }
    return w, metrics


def weight_gradient(logprobs: Tensor, weights: Tensor) -> Tensor:
    """``logprobs`` with the same values and a gradient scaled by ``weights`` per token (detached weights).

    sg(ℓ) + w·(ℓ − sg(ℓ)) is ℓ in value (ℓ − sg(ℓ) is exactly 0) and has ∂/∂ℓ = w, so a loss L(ℓ') of per-token terms
    L_i(ℓ'_i) gets the gradient of Σ w_i·L_i.
    """
    if logprobs.shape != weights.shape:
        raise ValueError(f"weight_gradient: logprobs {tuple(logprobs.shape)} and weights {tuple(weights.shape)}")
    detached = logprobs.detach()
    return detached + weights.detach().to(logprobs.dtype) * (logprobs - detached)


def apply_behaviour_weights(
    logprobs: Tensor, prox: Tensor, behav: Tensor, mask: Tensor, *, cap: float, mode: BehaviourMode
) -> tuple[Tensor, dict[str, float]]:
    """``logprobs`` with each token's gradient weighted by :func:`behaviour_weights` (values unchanged), and the
    weights' metrics."""
    weights, metrics = behaviour_weights(prox, behav, mask, cap=cap, mode=mode)
    return weight_gradient(logprobs, weights), metrics


def staleness(update_version: int, sample_versions: list[int], bound: int) -> tuple[float, float]:
    """``(mean, max)`` of ``update_version − v`` over the sampled turns' versions; raises past ``bound`` or below 0.

    The bound of ``rollout.max_staleness``: every trained token was sampled at most ``bound`` RL steps before the
    update that trains it (and never after it).
    """
    if not sample_versions:
        return 0.0, 0.0
    gaps = [update_version - v for v in sample_versions]
    worst, least = max(gaps), min(gaps)
    if worst > bound or least < 0:
        raise RuntimeError(
            f"staleness out of bounds: the update at RL step {update_version} trains turns sampled at versions "
            f"{sorted(set(sample_versions))}; rollout.max_staleness={bound} allows 0..{bound} steps"
        )
    return sum(gaps) / len(gaps), float(worst)
