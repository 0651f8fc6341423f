"""Next-token log-probabilities without materialising full-vocabulary logits for the whole batch.

For a 150k-token vocabulary the ``[B, T, V]`` float32 logits dominate training memory. Here the
final hidden states are projected chunk by chunk, each chunk under activation checkpointing, so at
most ``chunk_size × V`` logits live at once in the forward *and* the backward pass.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def _chunk_logprobs(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor):
    logits = F.linear(hidden, weight, bias).float()
    logz = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - logz


def _chunk_entropy(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
    logits = F.linear(hidden, weight, bias).float()
    logp = logits.log_softmax(-1)
    return -(logp.exp() * logp).sum(-1)


def chunked_token_logprobs(
    hidden: torch.Tensor, lm_head: torch.nn.Linear, targets: torch.Tensor, chunk_size: int = 4096
) -> torch.Tensor:
    """Log-probability of each target token.

    Args:
        hidden: ``[B, T, H]`` final hidden states (any float dtype).
        lm_head: the output projection (``weight [V, H]``).
        targets: ``[B, T]`` long, the token whose probability each position predicts.
        chunk_size: positions projected at once.

    Returns:
        ``[B, T]`` float32 log-probabilities.
    """
    flat_h = hidden.reshape(-1, hidden.shape[-1])
    flat_t = targets.reshape(-1)
    weight, bias = lm_head.weight, getattr(lm_head, "bias", None)
    pieces = []
    for start in range(0, flat_h.shape[0], chunk_size):
        h, t = flat_h[start : start + chunk_size], flat_t[start : start + chunk_size]
        if torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad):
            pieces.append(checkpoint(_chunk_logprobs, h, weight, bias, t, use_reentrant=False))
        else:
            pieces.append(_chunk_logprobs(h, weight, bias, t))
    return torch.cat(pieces).view(targets.shape)


@torch.no_grad()
def chunked_token_entropy(hidden: torch.Tensor, lm_head: torch.nn.Linear, chunk_size: int = 4096) -> torch.Tensor:
    """``[B, T]`` float32 entropy of the next-token distribution at each position (no gradient)."""
    flat_h = hidden.reshape(-1, hidden.shape[-1])
    weight, bias = lm_head.weight, getattr(lm_head, "bias", None)
    pieces = [_chunk_entropy(flat_h[s : s + chunk_size], weight, bias) for s in range(0, flat_h.shape[0], chunk_size)]
    return torch.cat(pieces).view(hidden.shape[:-1])


def model_token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    chunk_size: int = 4096,
    return_hidden: bool = False,
    target_mask: torch.Tensor | None = None,
    return_entropy: bool = False,
):
    """Log-prob of ``input_ids[:, 1:]`` under a HF causal LM (or a peft wrapper of one).

    Args:
        target_mask: ``[B, T-1]``; when given, only these positions are projected to the vocabulary
            (the rest of the output is 0). RL batches are mostly prompt and tool tokens, so this
            skips most of the head's work.
        return_entropy: also return the next-token entropy ``[B, T-1]`` (no gradient) at the same positions.

    Returns ``logprobs [B, T-1]`` float32 (position ``i`` scores token ``i + 1``), then the final hidden
    states ``[B, T, H]`` when ``return_hidden`` and the entropy when ``return_entropy``.
    """
    if _is_sharded(model):
        return _sharded_token_logprobs(model, input_ids, attention_mask, position_ids, return_hidden, target_mask, return_entropy)
    decoder = model.get_decoder()
    out = decoder(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False)
    hidden = out.last_hidden_state
    head = model.get_output_embeddings()
    predicting, targets = hidden[:, :-1], input_ids[:, 1:]
    entropy = None
    if target_mask is None:
        logprobs = chunked_token_logprobs(predicting, head, targets, chunk_size)
        if return_entropy:
            entropy = chunked_token_entropy(predicting.detach(), head, chunk_size)
    else:
        where = target_mask.bool()
        picked = chunked_token_logprobs(predicting[where][None], head, targets[where][None], chunk_size)[0]
        logprobs = torch.zeros(targets.shape, dtype=picked.dtype, device=picked.device).masked_scatter(where, picked)
        if return_entropy:
            ent = chunked_token_entropy(predicting[where].detach()[None], head, chunk_size)[0]
            entropy = torch.zeros(targets.shape, dtype=ent.dtype, device=ent.device).masked_scatter(where, ent)
    result = (logprobs,)
    if return_hidden:
        result += (hidden,)
    if return_entropy:
        result += (entropy,)
    return result if len(result) > 1 else logprobs


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is 1 (0 when the mask is empty, never NaN)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1)


def _is_sharded(model: torch.nn.Module) -> bool:
    return any(type(p).__name__ == "DTensor" for p in model.parameters())


def _sharded_token_logprobs(model, input_ids, attention_mask, position_ids, return_hidden, target_mask, return_entropy):
    """The same outputs through the model's own forward, for FSDP2-sharded models.

    FSDP2 gathers a module's weights in that module's forward hook, so calling the decoder or reading
    ``lm_head.weight`` directly (as the chunked path does) would see shards. This path materialises
    the full logits; use it where the chunked path cannot run.
    """
    out = model(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False,
        output_hidden_states=return_hidden,
    )
    logp = out.logits[:, :-1].float().log_softmax(-1)
    logprobs = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    if target_mask is not None:
        logprobs = logprobs * target_mask.to(logprobs.dtype)
    result = (logprobs,)
    if return_hidden:
        result += (out.hidden_states[-1],)
    if return_entropy:
        with torch.no_grad():
            entropy = -(logp.exp() * logp).sum(-1)
            if target_mask is not None:
                entropy = entropy * target_mask.to(entropy.dtype)
        result += (entropy,)
    return result if len(result) > 1 else logprobs
