"""Next-token log-probabilities without materialising full-vocabulary logits for the whole batch.

For a 150k-token vocabulary the ``[B, T, V]`` float32 logits dominate training memory. Here the
final hidden states are projected chunk by chunk through the fused head of :mod:`.fused_head`, so at
most one ``chunk_size × V`` float32 buffer lives at once in the forward *and* the backward pass.
``chunk_size=None`` sizes the chunk from the vocabulary (:func:`~.fused_head.auto_chunk_size`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .fused_head import (
    auto_chunk_size,
    linear_token_logprobs,
    linear_weighted_logprob_sum,
)


def _head_params(lm_head: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    return lm_head.weight, getattr(lm_head, "bias", None)


def _chunk(chunk_size: int | None, weight: torch.Tensor) -> int:
    if chunk_size is None:
        return auto_chunk_size(weight.shape[0])
    if chunk_size < 1:
        raise ValueError(f"loss_chunk_size must be >= 1 or null (sized from the vocabulary), got {chunk_size}")
    return chunk_size


def chunked_token_logprobs(
    hidden: torch.Tensor, lm_head: torch.nn.Linear, targets: torch.Tensor, chunk_size: int | None = None
) -> torch.Tensor:
    """Log-probability of each target token.

    Args:
        hidden: ``[B, T, H]`` final hidden states (any float dtype).
        lm_head: the output projection (``weight [V, H]``).
        targets: ``[B, T]`` long, the token whose probability each position predicts.
        chunk_size: positions projected at once (``None``: sized from the vocabulary).

    Returns:
        ``[B, T]`` float32 log-probabilities.
    """
    weight, bias = _head_params(lm_head)
    flat = linear_token_logprobs(
        hidden.reshape(-1, hidden.shape[-1]), weight, bias, targets.reshape(-1), _chunk(chunk_size, weight)
    )
    return flat.view(targets.shape)


@torch.no_grad()
def chunked_token_entropy(
    hidden: torch.Tensor, lm_head: torch.nn.Linear, chunk_size: int | None = None
) -> torch.Tensor:
    """``[B, T]`` float32 entropy of the next-token distribution at each position (no gradient)."""
    weight, bias = _head_params(lm_head)
    flat_h = hidden.reshape(-1, hidden.shape[-1])
    dummy = torch.zeros(flat_h.shape[0], dtype=torch.long, device=flat_h.device)
    _, entropy = linear_token_logprobs(flat_h, weight, bias, dummy, _chunk(chunk_size, weight), return_entropy=True)
    return entropy.view(hidden.shape[:-1])


class HeadLogprobs:
    """Log-probs of any token ids at chosen positions of a forward already run, with gradient into that forward.

    Position ``i`` is the distribution over token ``i + 1`` (the column convention of :class:`TokenLogprobs`).
    Unsharded models keep the final hidden states and project only the asked positions through the chunked head
    (one ``[chunk, V]`` buffer, as for the log-probs); the sharded path gathers from the full log-softmax its
    forward already materialised.
    """

    def __init__(self, *, hidden=None, lm_head=None, chunk_size: int | None = None, full_logprobs=None) -> None:
        if (full_logprobs is None) == (hidden is None or lm_head is None):
            raise ValueError("HeadLogprobs needs either hidden states and lm_head, or full_logprobs")
        self._hidden, self._lm_head, self._chunk_size, self._full = hidden, lm_head, chunk_size, full_logprobs

    def at(self, batch_idx: torch.Tensor, columns: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """``[n, K]`` float32 log-probs of ``ids [n, K]`` at positions ``(batch_idx[n], columns[n])``."""
        if self._full is not None:
            return self._full[batch_idx, columns].gather(-1, ids)
        weight, bias = _head_params(self._lm_head)
        chunk = _chunk(self._chunk_size, weight)
        return linear_token_logprobs(self._hidden[batch_idx, columns], weight, bias, ids, chunk)


class TokenLogprobs(NamedTuple):
    """What :func:`model_token_logprobs` returns; position ``i`` scores token ``i + 1``.

    logprobs: ``[B, T-1]`` float32 log-probs (0 outside ``target_mask`` when one was given).
    hidden: ``[B, T, H]`` final hidden states when ``return_hidden``, else ``None``.
    entropy: ``[B, T-1]`` float32 next-token entropy, no gradient, when ``return_entropy``, else ``None``.
    head: a :class:`HeadLogprobs` over the same forward when ``return_head``, else ``None``.
    """

    logprobs: torch.Tensor
    hidden: torch.Tensor | None = None
    entropy: torch.Tensor | None = None
    head: HeadLogprobs | None = None


def model_token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    chunk_size: int | None = None,
    return_hidden: bool = False,
    target_mask: torch.Tensor | None = None,
    return_entropy: bool = False,
    return_head: bool = False,
) -> TokenLogprobs:
    """Log-prob of ``input_ids[:, 1:]`` under a HF causal LM (or a peft wrapper of one).

    Args:
        input_ids: ``[B, T]`` long.
        attention_mask, position_ids: ``[B, T]``, passed to the model.
        chunk_size: positions projected to the vocabulary at once (``None``: sized from the vocabulary).
        return_hidden: also return the final hidden states.
        target_mask: ``[B, T-1]``; when given, only these positions are projected to the vocabulary
            (the rest of the output is 0). RL batches are mostly prompt and tool tokens, so this
            skips most of the head's work.
        return_entropy: also return the next-token entropy at the same positions, computed from the
            same projection as the log-probs.
        return_head: also return a :class:`HeadLogprobs` that scores other token ids at any position of
            this forward (e.g. a teacher's top-k for the ``distill`` CSD estimator), with gradient.

    FSDP2-sharded models take the full-logits path of :func:`_sharded_token_logprobs` (same outputs).
    """
    if _is_sharded(model):
        return _sharded_token_logprobs(
            model, input_ids, attention_mask, position_ids, return_hidden, target_mask, return_entropy, return_head
        )
    hidden, predicting, targets, where = _decode(model, input_ids, attention_mask, position_ids, target_mask)
    lm_head = model.get_output_embeddings()
    weight, bias = _head_params(lm_head)
    picked = linear_token_logprobs(predicting, weight, bias, targets, _chunk(chunk_size, weight), return_entropy)
    picked, entropy = picked if return_entropy else (picked, None)
    return TokenLogprobs(
        logprobs=_scatter_back(picked, where, input_ids),
        hidden=hidden if return_hidden else None,
        entropy=_scatter_back(entropy, where, input_ids) if return_entropy else None,
        head=HeadLogprobs(hidden=hidden[:, :-1], lm_head=lm_head, chunk_size=chunk_size) if return_head else None,
    )


def model_weighted_logprob_sum(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    token_weights: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    chunk_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``Σ token_weights · logprobs`` (differentiable scalar) and the detached ``logprobs [B, T-1]``.

    The SFT loss with ``token_weights = loss_mask[:, 1:] / n_tokens``. Only positions with a non-zero
    weight are projected to the vocabulary, and the head's gradient is formed in the forward
    (:class:`~.fused_head.LinearWeightedLogprobSum`), so the loss costs no more projections than HF's
    ``labels=`` path while holding one ``[chunk, V]`` buffer instead of several ``[B·T, V]`` tensors.

    Args:
        token_weights: ``[B, T-1]`` float weight of position ``i`` (which scores token ``i + 1``).
    """
    if _is_sharded(model):
        logprobs = _sharded_token_logprobs(model, input_ids, attention_mask, position_ids, False, None, False).logprobs
        return (logprobs * token_weights.to(logprobs.dtype)).sum(), logprobs.detach()
    where = token_weights != 0
    _, predicting, targets, where = _decode(model, input_ids, attention_mask, position_ids, where)
    weight, bias = _head_params(model.get_output_embeddings())
    total, picked = linear_weighted_logprob_sum(
        predicting, weight, bias, targets, token_weights[where], _chunk(chunk_size, weight)
    )
    return total, _scatter_back(picked, where, input_ids)


def _decode(model, input_ids, attention_mask, position_ids, target_mask):
    """Final hidden states ``[B, T, H]`` and the ``[N, H]`` rows / ``[N]`` targets to score."""
    decoder = model.get_decoder()
    out = decoder(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False)
    hidden = out.last_hidden_state
    predicting, targets = hidden[:, :-1], input_ids[:, 1:]
    if target_mask is None:
        return hidden, predicting.reshape(-1, hidden.shape[-1]), targets.reshape(-1), None
    where = target_mask.bool()
    return hidden, predicting[where], targets[where], where


def _scatter_back(values: torch.Tensor, where: torch.Tensor | None, input_ids: torch.Tensor) -> torch.Tensor:
    shape = (input_ids.shape[0], input_ids.shape[1] - 1)
    if where is None:
        return values.view(shape)
    return torch.zeros(shape, dtype=values.dtype, device=values.device).masked_scatter(where, values)


def _is_sharded(model: torch.nn.Module) -> bool:
    return any(type(p).__name__ == "DTensor" for p in model.parameters())


def _sharded_token_logprobs(
    model, input_ids, attention_mask, position_ids, return_hidden, target_mask, return_entropy, return_head=False
) -> TokenLogprobs:
    """The same outputs through the model's own forward, for FSDP2-sharded models.

    FSDP2 gathers a module's weights in that module's forward hook, so calling the decoder or reading
    ``lm_head.weight`` directly (as the chunked path does) would see shards. This path materialises
    the full logits; use it where the chunked path cannot run.
    """
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=False,
        output_hidden_states=return_hidden,
    )
    logp = out.logits[:, :-1].float().log_softmax(-1)
    logprobs = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    if target_mask is not None:
        logprobs = logprobs * target_mask.to(logprobs.dtype)
    entropy = None
    if return_entropy:
        with torch.no_grad():
            entropy = -(logp.exp() * logp).sum(-1)
            if target_mask is not None:
                entropy = entropy * target_mask.to(entropy.dtype)
    head = HeadLogprobs(full_logprobs=logp) if return_head else None
    return TokenLogprobs(logprobs, out.hidden_states[-1] if return_hidden else None, entropy, head)
