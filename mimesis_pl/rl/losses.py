"""Policy-gradient and context-self-distillation (CSD) losses as pure functions.

Log-probs may be any float dtype (bf16 under autocast): the arithmetic runs in float32, or float64 for
float64 inputs, and gradients flow back into the caller's dtype unchanged. Metrics are detached scalars
of the compute dtype. Masks may be bool, integer or float ``[B, T]``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping

import torch
from torch import Tensor

from mimesis_pl.checks import check_choice, resolve_registered

AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean")
CSD_NORMS = ("masked", "full")

# exp() of a log-ratio beyond ±20 overflows soon after; a ratio that far out is clipped anyway.
_LOG_RATIO_LIMIT = 20.0
# Keeps denominators of masked means finite when nothing is selected (the numerator is 0 then).
_TINY = 1e-8
# Top-k mass is capped below 1 so the tail bucket log(1 − mass) stays finite.
_TOPK_MASS_CAP = 1.0 - 1e-4


def _compute_dtype(tensor: Tensor) -> torch.dtype:
    # Half-precision log-prob differences lose most of their digits; never compute below float32.
    return torch.promote_types(tensor.dtype, torch.float32)


def _check_shapes(reference_name: str, reference: Tensor, **others: Tensor | None) -> None:
    if reference.dim() != 2:
        raise ValueError(f"{reference_name} must be [B, T]; got shape {tuple(reference.shape)}")
    for name, tensor in others.items():
        if tensor is not None and tensor.shape != reference.shape:
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)}; expected {tuple(reference.shape)} like {reference_name}"
            )


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Σ(values·mask) / Σ mask over all elements; 0 when the mask selects nothing."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(_TINY)


def aggregate_loss(per_token: Tensor, mask: Tensor, agg: str = "token-mean") -> Tensor:
    """Reduce a per-token loss [B, T] to a scalar.

    ``token-mean``: Σ(L·m)/Σm over the whole batch. ``seq-mean-token-sum``: per sequence Σ_t L·m, then
    the mean over sequences. ``seq-mean-token-mean``: per-sequence masked mean, then the mean over
    sequences. The sequence means count only sequences with at least one selected token, so padding
    rows do not shrink the loss.
    """
    check_choice("agg", agg, AGG_MODES)
    mask = mask.to(per_token.dtype)
    if agg == "token-mean":
        return masked_mean(per_token, mask)
    per_seq = (per_token * mask).sum(dim=1)
    tokens = mask.sum(dim=1)
    if agg == "seq-mean-token-mean":
        per_seq = per_seq / tokens.clamp_min(_TINY)
    has_tokens = (tokens > 0).to(per_token.dtype)
    return (per_seq * has_tokens).sum() / has_tokens.sum().clamp_min(1.0)


def policy_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = 3.0,
    agg: str = "token-mean",
) -> tuple[Tensor, dict[str, Tensor]]:
    """Dual-clip PPO loss.

    Per token, with ρ = exp(ℓ − ℓ_old): Lc = max(−Aρ, −A·clip(ρ, 1−clip_low, 1+clip_high)); where A < 0
    the loss is min(Lc, −A·dual_clip), which bounds how hard one very likely token is pushed down.

    Args:
        logprobs: [B, T] log-probs of the sampled tokens under the current policy (with grad).
        old_logprobs: [B, T] log-probs under the policy that sampled them (no grad).
        advantages: [B, T] per-token advantages (no grad).
        mask: [B, T] 1 on tokens that count.
        clip_low, clip_high: ratio bounds, 0 ≤ clip_low < 1, clip_high ≥ 0.
        dual_clip: constant c > 1, or None to turn the dual clip off.
        agg: aggregation mode, see `aggregate_loss`.

    Returns:
        (loss, metrics): loss a scalar; metrics ``clipfrac`` (share of tokens where the clipped
        term is active), ``clipfrac_lower`` (share where the dual clip is active) and ``approx_kl``
        (mean of ℓ_old − ℓ).
    """
    _check_shapes("logprobs", logprobs, old_logprobs=old_logprobs, advantages=advantages, mask=mask)
    check_choice("agg", agg, AGG_MODES)
    if not 0.0 <= clip_low < 1.0:
        raise ValueError(f"clip_low={clip_low!r} must lie in [0, 1)")
    if not clip_high >= 0.0:
        raise ValueError(f"clip_high={clip_high!r} must be ≥ 0")
    if dual_clip is not None and not dual_clip > 1.0:
        raise ValueError(f"dual_clip={dual_clip!r} must be > 1, or None to disable it")
    dtype = _compute_dtype(logprobs)
    logp = logprobs.to(dtype)
    old = old_logprobs.detach().to(dtype)
    adv = advantages.detach().to(dtype)

    ratio = torch.exp((logp - old).clamp(-_LOG_RATIO_LIMIT, _LOG_RATIO_LIMIT))
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    lower_active = torch.zeros_like(per_token, dtype=torch.bool)
    if dual_clip is not None:
        bound = -adv * dual_clip
        negative = adv < 0
        lower_active = negative & (bound < per_token)
        per_token = torch.where(negative, torch.minimum(per_token, bound), per_token)

    loss = aggregate_loss(per_token, mask, agg)
    with torch.no_grad():
        metrics = {
            "clipfrac": masked_mean((clipped > unclipped).to(dtype), mask),
            "clipfrac_lower": masked_mean(lower_active.to(dtype), mask),
            "approx_kl": masked_mean(old - logp, mask),
        }
    return loss, metrics


def _topk_with_tail(topk_logprobs: Tensor) -> Tensor:
    """[..., K] log-probs of K tokens → [..., K+1] with the log of the remaining mass appended."""
    mass = topk_logprobs.exp().sum(dim=-1).clamp(max=_TOPK_MASS_CAP)
    return torch.cat([topk_logprobs, torch.log1p(-mass).unsqueeze(-1)], dim=-1)


def topk_reverse_kl(student_topk_logprobs: Tensor, teacher_topk_logprobs: Tensor) -> Tensor:
    """Reverse KL(student ‖ teacher) over the teacher's top-K tokens plus one tail bucket.

    Args:
        student_topk_logprobs: [B, T, K] student log-probs at the teacher's top-K token ids (with grad).
        teacher_topk_logprobs: [B, T, K] teacher log-probs of those ids (gradient is not taken).

    Returns:
        [B, T] per-position KL (float32, or float64 for float64 inputs).
    """
    dtype = _compute_dtype(student_topk_logprobs)
    student = _topk_with_tail(student_topk_logprobs.to(dtype))
    teacher = _topk_with_tail(teacher_topk_logprobs.detach().to(dtype))
    return (student.exp() * (student - teacher)).sum(dim=-1)


CSDEstimator = Callable[..., Tensor]
_CSD_ESTIMATORS: dict[str, tuple[CSDEstimator, tuple[str, ...]]] = {}
_CSD_ESTIMATOR_INPUTS = frozenset(
    {
        "student",
        "target",
        "mask",
        "beta",
        "agg",
        "norm",
        "response_mask",
        "student_topk_logprobs",
        "teacher_topk_logprobs",
    }
)


def register_csd_estimator(name: str) -> Callable[[CSDEstimator], CSDEstimator]:
    """Register a CSD estimator under ``name`` for :func:`csd_loss`.

    The function takes keyword-only arguments named like :func:`csd_loss`'s inputs after its common
    preparation: ``student`` ([B, T] student log-probs in the compute dtype, with grad), ``target``
    ([B, T] the placebo-corrected teacher t̃, no grad, finite), ``mask`` ([B, T] in the compute dtype),
    and any of ``beta``, ``agg``, ``norm``, ``response_mask``, ``student_topk_logprobs``,
    ``teacher_topk_logprobs``. It returns the scalar loss; ``csd_loss`` passes exactly the arguments
    the signature names.
    """

    def register(fn: CSDEstimator) -> CSDEstimator:
        if name in _CSD_ESTIMATORS:
            raise ValueError(f"CSD estimator {name!r} is already registered")
        wanted = tuple(inspect.signature(fn).parameters)
        unknown = sorted(set(wanted) - _CSD_ESTIMATOR_INPUTS)
        if unknown:
            raise ValueError(
                f"CSD estimator {name!r} asks for {unknown}, which csd_loss does not have; "
                f"choose from {sorted(_CSD_ESTIMATOR_INPUTS)}"
            )
        _CSD_ESTIMATORS[name] = (fn, wanted)
        return fn

    return register


def csd_estimator_names() -> list[str]:
    """The registered CSD estimators' names (built in, then registered by users' packages)."""
    return list(_CSD_ESTIMATORS)


def resolve_csd_estimator(name: str, *, key: str = "model.init_args.csd.estimator") -> str:
    """The registered name of ``name``: a registered estimator as it is, or ``package.module:function`` imported and
    registered under that path (a function with :func:`register_csd_estimator`'s signature); a clear error otherwise."""
    return resolve_registered(name, _CSD_ESTIMATORS, register_csd_estimator, what="CSD estimator", key=key)


def csd_estimator_reads_topk(name: str) -> bool:
    """Whether the estimator takes the teacher's and student's top-k log-probs (so the update must compute them)."""
    return "teacher_topk_logprobs" in _CSD_ESTIMATORS[name][1]


@register_csd_estimator("sdar")
def sdar_loss(*, student: Tensor, target: Tensor, mask: Tensor, beta: float) -> Tensor:
    """(1/M) Σ m·g·(t̃ − s), gate g = sg(σ(β·Δ)), Δ = sg(t̃ − s): gradient −(1/M) Σ m·g·∇s (token-mean)."""
    gate = torch.sigmoid(beta * (target - student.detach()))
    return masked_mean(gate * (target - student), mask)


@register_csd_estimator("ref")
def ref_loss(*, student: Tensor, target: Tensor, mask: Tensor, norm: str, response_mask: Tensor | None) -> Tensor:
    """(1/B) Σ_b Σ_t −Δ·s·m / max(1, n_b), n_b = Σ_t mask (``masked``) or Σ_t response_mask (``full``)."""
    delta = target - student.detach()
    n_b = (mask if norm == "masked" else response_mask.to(mask.dtype)).sum(dim=1)
    return ((-delta * student * mask).sum(dim=1) / n_b.clamp_min(1.0)).mean()


@register_csd_estimator("k3")
def k3_loss(*, student: Tensor, target: Tensor, mask: Tensor, agg: str) -> Tensor:
    """aggregate_loss(clamp(e^(t̃−s) − (t̃−s) − 1, −10, 10), mask, agg)."""
    # Clamping the log-ratio first keeps exp() finite; the outer clamp already zeroes the gradient
    # for x > 2.6 and x < −11, so the inner one changes neither value nor gradient.
    x = (target - student).clamp(-_LOG_RATIO_LIMIT, _LOG_RATIO_LIMIT)
    return aggregate_loss((torch.exp(x) - x - 1.0).clamp(-10.0, 10.0), mask, agg)


@register_csd_estimator("distill")
def distill_loss(
    *,
    mask: Tensor,
    norm: str,
    response_mask: Tensor | None,
    student_topk_logprobs: Tensor,
    teacher_topk_logprobs: Tensor,
) -> Tensor:
    """Σ KL_i·m_i / n, KL_i = `topk_reverse_kl`, n = Σ mask (``masked``) or Σ response_mask (``full``)."""
    kl = topk_reverse_kl(student_topk_logprobs, teacher_topk_logprobs)
    n = mask.sum() if norm == "masked" else response_mask.to(mask.dtype).sum()
    return (kl * mask).sum() / n.clamp_min(_TINY)


def csd_loss(
    student_logprobs: Tensor,
    teacher_logprobs: Tensor,
    mask: Tensor,
    estimator: str = "sdar",
    beta: float = 5.0,
    placebo_logprobs: Tensor | None = None,
    *,
    agg: str = "token-mean",
    norm: str = "masked",
    response_mask: Tensor | None = None,
    student_topk_logprobs: Tensor | None = None,
    teacher_topk_logprobs: Tensor | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Context-self-distillation loss towards a teacher that saw a coaching note.

    Notation per token: s = student log-prob (with grad), t = teacher log-prob, p = placebo log-prob.
    With a placebo (not NaN), the teacher is replaced by t̃ = sg(s) + (t − p), so the gap t̃ − s = t − p
    cancels the content-free shift any inserted user turn causes; elsewhere t̃ = t. Δ = sg(t̃ − s).

    Estimators (M = Σ mask), one function each, registered by name (:func:`register_csd_estimator`):
        ``sdar`` (:func:`sdar_loss`): (1/M) Σ m·g·(t̃ − s) with gate g = sg(σ(β·Δ)); gradient
            −(1/M) Σ m·g·∇s, so tokens the teacher prefers are imitated with weight → 1 and the rest
            with weight → 0 (always token-mean).
        ``ref`` (:func:`ref_loss`): (1/B) Σ_b Σ_t −Δ·s·m / max(1, n_b), n_b = Σ_t mask
            (``norm="masked"``) or Σ_t response_mask (``norm="full"``); B counts every sequence.
        ``k3`` (:func:`k3_loss`): aggregate_loss(clamp(e^(t̃−s) − (t̃−s) − 1, −10, 10), mask, agg).
        ``distill`` (:func:`distill_loss`): Σ KL_i·m_i / n with KL_i = `topk_reverse_kl` and n = M
            (``"masked"``) or Σ response_mask (``"full"``); needs the two top-k tensors; it distils the raw
            teacher: a placebo changes only the metrics, as in the reference (docs/decisions.md A100).

    Steps after the checks: the placebo-corrected target (:func:`placebo_target`), the estimator, the gap and
    gate metrics (:func:`csd_gap_metrics`).

    Args:
        student_logprobs: [B, T] student log-probs of the sampled tokens (with grad).
        teacher_logprobs: [B, T] teacher log-probs of the same tokens (no grad); ignored, and allowed to
            be NaN, where ``mask`` is 0.
        mask: [B, T] 1 on tokens that have a teacher row.
        estimator: one of ``sdar``, ``ref``, ``k3``, ``distill``.
        beta: gate sharpness ≥ 0 (β = 0 gives a constant gate of 0.5).
        placebo_logprobs: [B, T] teacher log-probs under a placebo note, NaN where there is none.
        agg: aggregation of ``k3``, see `aggregate_loss`.
        norm: ``masked`` or ``full``, the normaliser of ``ref`` and ``distill``.
        response_mask: [B, T] all trained tokens; required when ``norm="full"``.
        student_topk_logprobs, teacher_topk_logprobs: [B, T, K], required by ``distill``.

    Returns:
        (loss, metrics): loss a scalar; metrics ``gate_mean``, ``gate_active_ratio`` (share of
        gates > 0.5), ``teacher_gap_mean`` (mean Δ), ``gap_abs_mean`` (mean |t̃ − s|), ``raw_gap_abs_mean``
        (mean |t − s|), ``placebo_share`` (1 − gap_abs_mean / raw_gap_abs_mean; 0 without a gap),
        ``placebo_token_frac`` (share of masked tokens with a placebo), ``frac_tokens`` (M / B·T); all
        means are over masked tokens.
    """
    check_choice("estimator", estimator, _CSD_ESTIMATORS)
    check_choice("norm", norm, CSD_NORMS)
    check_choice("agg", agg, AGG_MODES)
    _check_shapes(
        "student_logprobs",
        student_logprobs,
        teacher_logprobs=teacher_logprobs,
        mask=mask,
        placebo_logprobs=placebo_logprobs,
        response_mask=response_mask,
    )
    if not beta >= 0.0:
        raise ValueError(f"beta={beta!r} must be ≥ 0")
    if norm == "full" and estimator in ("ref", "distill") and response_mask is None:
        raise ValueError(f"estimator={estimator!r} with norm='full' needs response_mask [B, T]")
    if csd_estimator_reads_topk(estimator):
        _check_distill_inputs(student_logprobs, student_topk_logprobs, teacher_topk_logprobs)

    dtype = _compute_dtype(student_logprobs)
    m = mask.to(dtype)
    s = student_logprobs.to(dtype)
    s_sg = s.detach()
    teacher, target, has_placebo = placebo_target(s_sg, teacher_logprobs, m, placebo_logprobs)
    fn, wanted = _CSD_ESTIMATORS[estimator]
    available = {
        "student": s,
        "target": target,
        "mask": m,
        "beta": beta,
        "agg": agg,
        "norm": norm,
        "response_mask": response_mask,
        "student_topk_logprobs": student_topk_logprobs,
        "teacher_topk_logprobs": teacher_topk_logprobs,
    }
    loss = fn(**{name: available[name] for name in wanted})
    return loss, csd_gap_metrics(s_sg, teacher, target, has_placebo, m, beta)


def placebo_target(
    student: Tensor, teacher_logprobs: Tensor, mask: Tensor, placebo_logprobs: Tensor | None
) -> tuple[Tensor, Tensor, Tensor]:
    """``(t, t̃, has_placebo)`` of :func:`csd_loss` from the detached student log-probs ``student`` (its dtype).

    t is the teacher where ``mask`` > 0 and ``student`` elsewhere: teacher values outside the mask are placeholders
    (possibly NaN), and a NaN there would survive the multiplication by a zero mask, in the loss and in its
    gradient. t̃ = student + (t − p) where a masked token has a placebo p (not NaN), t elsewhere.
    """
    selected = mask > 0
    t = torch.where(selected, teacher_logprobs.detach().to(student.dtype), student)
    if placebo_logprobs is None:
        return t, t, torch.zeros_like(selected)
    p = placebo_logprobs.detach().to(student.dtype)
    has_placebo = selected & ~torch.isnan(p)
    return t, torch.where(has_placebo, student + (t - p), t), has_placebo


@torch.no_grad()
def csd_gap_metrics(
    student: Tensor, teacher: Tensor, target: Tensor, has_placebo: Tensor, mask: Tensor, beta: float
) -> dict[str, Tensor]:
    """The metrics of :func:`csd_loss` (see there) from the detached student log-probs, t, t̃ and the float mask."""
    delta = target - student
    gate = torch.sigmoid(beta * delta)
    raw_abs = masked_mean((teacher - student).abs(), mask)
    gap_abs = masked_mean(delta.abs(), mask)
    return {
        "gate_mean": masked_mean(gate, mask),
        "gate_active_ratio": masked_mean((gate > 0.5).to(mask.dtype), mask),
        "teacher_gap_mean": masked_mean(delta, mask),
        "gap_abs_mean": gap_abs,
        "raw_gap_abs_mean": raw_abs,
        "placebo_share": (raw_abs - gap_abs) / raw_abs.clamp_min(1e-6),
        "placebo_token_frac": masked_mean(has_placebo.to(mask.dtype), mask),
        "frac_tokens": mask.sum() / max(1, mask.numel()),
    }


def _check_distill_inputs(
    student_logprobs: Tensor, student_topk_logprobs: Tensor | None, teacher_topk_logprobs: Tensor | None
) -> None:
    if student_topk_logprobs is None or teacher_topk_logprobs is None:
        raise ValueError("estimator='distill' needs student_topk_logprobs and teacher_topk_logprobs [B, T, K]")
    expected = (*student_logprobs.shape, teacher_topk_logprobs.shape[-1])
    named = (("student_topk_logprobs", student_topk_logprobs), ("teacher_topk_logprobs", teacher_topk_logprobs))
    for name, topk in named:
        if tuple(topk.shape) != expected:
            raise ValueError(f"{name} has shape {tuple(topk.shape)}; expected {expected}")


def gap_gate_by_group(
    student_logprobs: Tensor,
    teacher_logprobs: Tensor,
    mask: Tensor,
    groups: Mapping[str, Tensor],
    beta: float = 5.0,
    placebo_logprobs: Tensor | None = None,
) -> dict[str, float]:
    """Mean teacher gap Δ and ``sdar`` gate σ(β·Δ) over the coached tokens of each group (diagnostics only).

    Δ is the gap `csd_loss` uses: ``t − p`` where a placebo exists, else ``t − s``. ``groups`` maps a name to a
    ``[B, T]`` bool mask (e.g. lapse vs steady turns); returns ``teacher_gap_mean/<name>``,
    ``gate_mean/<name>`` and ``tokens/<name>`` (NaN means for a group without coached tokens).
    """
    selected = mask > 0
    s = student_logprobs.detach().float()
    t = torch.where(selected, teacher_logprobs.detach().float(), s)
    gap = t - s
    if placebo_logprobs is not None:
        p = placebo_logprobs.detach().float()
        has = selected & ~torch.isnan(p)
        gap = torch.where(has, t - torch.nan_to_num(p), gap)
    gate = torch.sigmoid(beta * gap)
    out: dict[str, float] = {}
    for name, group in groups.items():
        keep = selected & group.to(selected.device).bool()
        n = int(keep.sum())
        out[f"tokens/{name}"] = float(n)
        out[f"teacher_gap_mean/{name}"] = float(gap[keep].mean()) if n else math.nan
        out[f"gate_mean/{name}"] = float(gate[keep].mean()) if n else math.nan
    return out
