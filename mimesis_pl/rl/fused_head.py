"""Output projection + log-softmax fused, chunk by chunk, with a hand-written backward.

Full-vocabulary logits are ``[N, V]`` (151,936 columns for Qwen): the plain path keeps them, their
log-softmax and their gradient alive at once. Here each chunk of positions is projected into one
float32 buffer that is turned *in place* into probabilities and then into the gradient of the
logits, so at most one ``[chunk, V]`` buffer exists at a time and nothing of size ``V`` per position
survives the call.

Two autograd functions share that chunk loop:

* :class:`LinearTokenLogprobs` returns per-token log-probabilities for any downstream loss (RL
  ratios, KL). Its forward keeps only the hidden states and one log-normaliser per position; the
  backward recomputes each chunk's logits (4 projections in all, like activation checkpointing, but
  without autograd's extra ``[chunk, V]`` temporaries).
* :class:`LinearWeightedLogprobSum` returns ``Σ_i w_i · log p(t_i)`` for weights known up front (the
  SFT loss: ``w = loss_mask / n_tokens``). Its gradient is linear in the incoming scalar, so it is
  computed during the forward and only scaled in the backward: 3 projections, the same as the plain
  path, and no recomputation.

Matmuls run in the autocast dtype when autocast is on (bf16 on GPU), otherwise in the weight's
dtype; softmax arithmetic is always float32. Both match the plain
``F.linear(...).float().log_softmax(-1)`` path to float32 rounding (``tests/modules/test_fused_head.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# Bytes of one float32 ``[chunk, V]`` buffer that :func:`auto_chunk_size` aims for: small next to
# the plain path's several ``[N, V]`` tensors, large enough that each projection is a big GEMM.
CHUNK_BUDGET_BYTES = 256 * 2**20


def auto_chunk_size(vocab_size: int, budget_bytes: int = CHUNK_BUDGET_BYTES) -> int:
    """Positions per chunk so that one float32 ``[chunk, vocab_size]`` buffer is about ``budget_bytes``.

    A multiple of 64 in ``[64, 16384]``: 384 for Qwen's 151,936 tokens, 16,384 for a tiny vocabulary.
    """
    rows = budget_bytes // (4 * max(1, vocab_size))
    return int(min(16384, max(64, rows // 64 * 64)))


def _compute_dtype(device: torch.device, weight: torch.Tensor) -> torch.dtype:
    if torch.is_autocast_enabled(device.type):
        return torch.get_autocast_dtype(device.type)
    return weight.dtype


def _chunk_logits(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """``[c, V]`` float32 logits of one chunk (the one big buffer)."""
    logits = F.linear(h, w, b)
    return logits if logits.dtype == torch.float32 else logits.float()


def _columns(targets: torch.Tensor) -> torch.Tensor:
    """``[c]`` targets (one token per position) → ``[c, 1]``; ``[c, K]`` (K tokens per position) unchanged."""
    return targets[:, None] if targets.dim() == 1 else targets


def _normalise_(logits: torch.Tensor, targets: torch.Tensor, want_entropy: bool):
    """Turn ``logits`` in place into ``exp(logits − max)`` (unnormalised probabilities).

    Returns ``(logprob of targets, logsumexp, entropy or None, row sums [c, 1])``: the caller divides
    by the row sums only where it needs probabilities, folded into its next in-place pass. ``targets``
    is ``[c]`` or ``[c, K]``; the log-probs have its shape.
    """
    picked = logits.gather(-1, _columns(targets)).view(targets.shape)
    top = logits.amax(-1, keepdim=True)
    logits.sub_(top)  # shifted logits x = z - max
    entropy = None
    if want_entropy:
        shifted = logits.clone()
    logits.exp_()
    total = logits.sum(-1, keepdim=True)
    lse = (top + total.log()).squeeze(-1)
    if want_entropy:
        # H = log Σe^x − Σ e^x·x / Σe^x, as a batched dot product so no third [c, V] tensor is made
        dot = torch.bmm(logits[:, None, :], shifted[:, :, None]).reshape(-1)
        entropy = total.squeeze(-1).log() - dot / total.squeeze(-1)
        del shifted
    return picked - (lse if targets.dim() == 1 else lse[:, None]), lse, entropy, total


def _grad_logits_(probs: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor, total: torch.Tensor | None = None):
    """In place: ``probs [c, V]`` → ``d(Σ scale_i · log p_i(t_i)) / d logits = scale_i · (onehot(t_i) − p_i)``.

    With ``[c, K]`` targets and scales the gradient is ``Σ_k scale_ik · onehot(t_ik) − (Σ_k scale_ik) · p_i``
    (a repeated id gets the sum of its scales). With ``total`` the input is unnormalised (``p · total``) and the
    division joins the same pass.
    """
    scale = _columns(scale)
    row = scale.sum(-1, keepdim=True)
    probs.mul_(-row if total is None else -row / total)
    probs.scatter_add_(-1, _columns(targets), scale)
    return probs


class _Flags:
    """What the caller needs gradients for (decided outside the autograd function)."""

    def __init__(self, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        on = torch.is_grad_enabled()
        self.hidden = on and hidden.requires_grad
        self.weight = on and weight.requires_grad
        self.bias = on and bias is not None and bias.requires_grad

    @property
    def any(self) -> bool:
        return self.hidden or self.weight or self.bias


def _backward_chunk(g_logits, h, w, flags: _Flags, grads: dict, start: int, stop: int, cdtype) -> None:
    """Accumulate the hidden / weight / bias gradients of one chunk from its logits gradient."""
    g = g_logits if g_logits.dtype == cdtype else g_logits.to(cdtype)
    if flags.hidden:
        grads["hidden"][start:stop] = g @ w
    if flags.weight:
        if cdtype == torch.float32:
            grads["weight"].addmm_(g.t(), h)
        else:
            grads["weight"].add_(g.t() @ h)
    if flags.bias:
        grads["bias"].add_(g_logits.sum(0))


def _new_grads(hidden, weight, bias, flags: _Flags) -> dict:
    grads = {}
    if flags.hidden:
        grads["hidden"] = torch.empty(hidden.shape, dtype=hidden.dtype, device=hidden.device)
    if flags.weight:
        grads["weight"] = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
    if flags.bias:
        grads["bias"] = torch.zeros(bias.shape, dtype=torch.float32, device=bias.device)
    return grads


def _finish(grads: dict, name: str, like: torch.Tensor | None, scale: torch.Tensor | None = None):
    g = grads.get(name)
    if g is None:
        return None
    if scale is not None:
        g = g * scale
    return g.to(like.dtype)


class LinearTokenLogprobs(torch.autograd.Function):
    """``log_softmax(hidden @ weight.T + bias)[i, targets[i]]`` for ``hidden [N, H]`` → ``[N]`` float32.

    ``targets [N, K]`` (K token ids per position, e.g. a teacher's top-k) gives ``[N, K]``. Optionally also the
    entropy ``[N]`` of each row's distribution (not differentiable).
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, chunk_size: int, flags: _Flags, want_entropy: bool):
        cdtype = _compute_dtype(hidden.device, weight)
        with torch.autocast(hidden.device.type, enabled=False):
            w = weight.to(cdtype)
            b = None if bias is None else bias.to(cdtype)
            n = hidden.shape[0]
            logprobs = torch.empty(targets.shape, dtype=torch.float32, device=hidden.device)
            lse = torch.empty(n, dtype=torch.float32, device=hidden.device)
            entropy = torch.empty_like(lse) if want_entropy else None
            for start in range(0, n, chunk_size):
                stop = min(n, start + chunk_size)
                logits = _chunk_logits(hidden[start:stop].to(cdtype), w, b)
                lp, z, ent, _ = _normalise_(logits, targets[start:stop], want_entropy)
                logprobs[start:stop], lse[start:stop] = lp, z
                if want_entropy:
                    entropy[start:stop] = ent
                del logits
        ctx.chunk_size, ctx.flags, ctx.cdtype = chunk_size, flags, cdtype
        ctx.has_bias = bias is not None
        if flags.any:
            ctx.save_for_backward(hidden, weight, bias, targets, lse)
        if want_entropy:
            ctx.mark_non_differentiable(entropy)
            return logprobs, entropy
        return logprobs

    @staticmethod
    def backward(ctx, grad_logprobs, *unused):
        hidden, weight, bias, targets, lse = ctx.saved_tensors
        flags, cdtype = ctx.flags, ctx.cdtype
        grads = _new_grads(hidden, weight, bias, flags)
        with torch.autocast(hidden.device.type, enabled=False):
            w = weight.to(cdtype)
            b = None if bias is None else bias.to(cdtype)
            scale = grad_logprobs.float()
            for start in range(0, hidden.shape[0], ctx.chunk_size):
                stop = min(hidden.shape[0], start + ctx.chunk_size)
                h = hidden[start:stop].to(cdtype)
                logits = _chunk_logits(h, w, b)
                probs = logits.sub_(lse[start:stop, None]).exp_()
                g = _grad_logits_(probs, targets[start:stop], scale[start:stop])
                _backward_chunk(g, h, w, flags, grads, start, stop, cdtype)
                del logits, probs, g
        return (
            _finish(grads, "hidden", hidden),
            _finish(grads, "weight", weight),
            _finish(grads, "bias", bias),
            None,
            None,
            None,
            None,
        )


class LinearWeightedLogprobSum(torch.autograd.Function):
    """``Σ_i weights[i] · log p(targets[i])`` (a float32 scalar) and the detached ``[N]`` log-probs.

    The gradient is computed in the forward (it is linear in the incoming scalar gradient), so the
    logits are projected once forward and twice for the gradient — as many projections as the plain
    path — and never recomputed.
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, weights, chunk_size: int, flags: _Flags):
        cdtype = _compute_dtype(hidden.device, weight)
        grads = _new_grads(hidden, weight, bias, flags)
        with torch.autocast(hidden.device.type, enabled=False):
            w = weight.to(cdtype)
            b = None if bias is None else bias.to(cdtype)
            n = hidden.shape[0]
            scale = weights.float()
            logprobs = torch.empty(n, dtype=torch.float32, device=hidden.device)
            for start in range(0, n, chunk_size):
                stop = min(n, start + chunk_size)
                h = hidden[start:stop].to(cdtype)
                logits = _chunk_logits(h, w, b)
                logprobs[start:stop], _, _, total = _normalise_(logits, targets[start:stop], False)
                if flags.any:
                    g = _grad_logits_(logits, targets[start:stop], scale[start:stop], total)
                    _backward_chunk(g, h, w, flags, grads, start, stop, cdtype)
                del logits
        ctx.grads = grads
        ctx.dtypes = (hidden.dtype, weight.dtype, None if bias is None else bias.dtype)
        ctx.mark_non_differentiable(logprobs)
        return (scale * logprobs).sum(), logprobs

    @staticmethod
    def backward(ctx, grad_total, unused):
        grads, (h_dtype, w_dtype, b_dtype) = ctx.grads, ctx.dtypes
        ctx.grads = None  # free the precomputed gradients once used
        out = []
        for name, dtype in (("hidden", h_dtype), ("weight", w_dtype), ("bias", b_dtype)):
            g = grads.get(name)
            out.append(None if g is None else (g * grad_total.to(g.dtype)).to(dtype))
        return (*out, None, None, None, None)


def linear_token_logprobs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    targets: torch.Tensor,
    chunk_size: int,
    return_entropy: bool = False,
):
    """``[N]`` float32 log-probabilities of ``targets [N]`` under ``hidden [N, H] @ weight[V, H].T``.

    ``targets [N, K]`` scores K ids per position (``[N, K]`` out, one ``[chunk, V]`` buffer as for one id). With
    ``return_entropy`` also the ``[N]`` entropy of each position's distribution (no gradient).
    """
    flags = _Flags(hidden, weight, bias)
    return LinearTokenLogprobs.apply(hidden, weight, bias, targets, chunk_size, flags, return_entropy)


def linear_weighted_logprob_sum(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    targets: torch.Tensor,
    weights: torch.Tensor,
    chunk_size: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Σ weights · logprobs, logprobs)``: a differentiable float32 scalar and detached ``[N]`` log-probs."""
    flags = _Flags(hidden, weight, bias)
    return LinearWeightedLogprobSum.apply(hidden, weight, bias, targets, weights, chunk_size, flags)
