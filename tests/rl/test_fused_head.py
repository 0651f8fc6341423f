"""The fused head gives the plain full-logits path's values and gradients (float32 tolerance)."""

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

from mimesis_pl.rl.fused_head import (
    auto_chunk_size,
    linear_token_logprobs,
    linear_weighted_logprob_sum,
)
from mimesis_pl.rl.token_ops import (
    _sharded_token_logprobs,
    model_token_logprobs,
    model_weighted_logprob_sum,
)


def _plain(hidden, weight, bias, targets):
    logp = F.linear(hidden, weight, bias).float().log_softmax(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return logp.gather(-1, targets[:, None]).squeeze(-1), entropy


def _leaves(seed=0, n=11, h=8, v=37, bias=True):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, h, generator=g, requires_grad=True)
    weight = torch.randn(v, h, generator=g, requires_grad=True)
    b = torch.randn(v, generator=g, requires_grad=True) if bias else None
    targets = torch.randint(0, v, (n,), generator=g)
    return hidden, weight, b, targets


def _grads(out, params):
    return torch.autograd.grad(out, [p for p in params if p is not None])


@pytest.mark.parametrize("chunk", [1, 4, 11, 64])
def test_token_logprobs_values_entropy_and_grads_match_plain(chunk):
    hidden, weight, bias, targets = _leaves()
    upstream = torch.randn(hidden.shape[0], generator=torch.Generator().manual_seed(1))  # any downstream loss
    ours, ent = linear_token_logprobs(hidden, weight, bias, targets, chunk, return_entropy=True)
    ref, ref_ent = _plain(hidden, weight, bias, targets)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent, ref_ent, atol=1e-5, rtol=1e-5)
    assert not ent.requires_grad
    for a, b in zip(
        _grads((ours * upstream).sum(), [hidden, weight, bias]), _grads((ref * upstream).sum(), [hidden, weight, bias])
    ):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk", [1, 4, 64])
def test_k_ids_per_position_match_plain_values_and_grads(chunk):
    """``targets [N, K]`` (a teacher's top-k, for the distill CSD estimator) scores K ids per position in the same
    chunk loop; a repeated id gets the sum of its gradients."""
    hidden, weight, bias, _ = _leaves(seed=3)
    ids = torch.randint(0, weight.shape[0], (hidden.shape[0], 3), generator=torch.Generator().manual_seed(4))
    ids[0, 2] = ids[0, 0]  # a repeated id
    upstream = torch.randn(ids.shape, generator=torch.Generator().manual_seed(5))
    ours = linear_token_logprobs(hidden, weight, bias, ids, chunk)
    ref = F.linear(hidden, weight, bias).float().log_softmax(-1).gather(-1, ids)
    assert ours.shape == ids.shape
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(
        _grads((ours * upstream).sum(), [hidden, weight, bias]), _grads((ref * upstream).sum(), [hidden, weight, bias])
    ):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    one = linear_token_logprobs(hidden, weight, bias, ids[:, :1], chunk)  # K = 1 is the one-id path
    torch.testing.assert_close(one[:, 0], linear_token_logprobs(hidden, weight, bias, ids[:, 0], chunk))


@pytest.mark.parametrize("chunk", [3, 64])
def test_weighted_sum_equals_plain_masked_loss_with_grads(chunk):
    hidden, weight, bias, targets = _leaves(seed=2)
    mask = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0], dtype=torch.float32)
    weights = mask / mask.sum()
    total, logprobs = linear_weighted_logprob_sum(hidden, weight, bias, targets, weights, chunk)
    ref_lp, _ = _plain(hidden, weight, bias, targets)
    ref_total = (ref_lp * weights).sum()
    torch.testing.assert_close(total, ref_total, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(logprobs, ref_lp.detach(), atol=1e-5, rtol=1e-5)
    # the gradient is formed in the forward and scaled by the incoming one (here 3, as a loss scale)
    got = _grads(3.0 * total, [hidden, weight, bias])
    want = _grads(3.0 * ref_total, [hidden, weight, bias])
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert got[0][1].abs().max() == 0  # masked positions get exactly no gradient


def test_frozen_head_gets_no_gradient_and_costs_none():
    hidden, weight, _, targets = _leaves(bias=False)
    weight.requires_grad_(False)
    total, _ = linear_weighted_logprob_sum(hidden, weight, None, targets, torch.ones(hidden.shape[0]), 4)
    (g,) = torch.autograd.grad(total, hidden)
    ref, _ = _plain(hidden, weight, None, targets)
    (want,) = torch.autograd.grad(ref.sum(), hidden)
    torch.testing.assert_close(g, want, atol=1e-5, rtol=1e-5)
    assert weight.grad is None


def test_no_grad_forward_keeps_nothing():
    hidden, weight, bias, targets = _leaves()
    with torch.no_grad():
        total, _ = linear_weighted_logprob_sum(hidden, weight, bias, targets, torch.ones(11), 4)
    assert not total.requires_grad
    torch.testing.assert_close(total, _plain(hidden, weight, bias, targets)[0].sum().detach(), atol=1e-5, rtol=1e-5)


def test_bf16_autocast_matches_plain_autocast():
    hidden, weight, bias, targets = _leaves(n=16, h=16, v=64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = linear_token_logprobs(hidden, weight, bias, targets, 5)
        ref = F.linear(hidden, weight, bias).float().log_softmax(-1).gather(-1, targets[:, None]).squeeze(-1)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)  # same bf16 logits, same fp32 softmax
    g_ours = _grads(ours.sum(), [hidden, weight])
    g_ref = _grads(ref.sum(), [hidden, weight])
    for a, b in zip(g_ours, g_ref):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a, b, atol=2e-2, rtol=2e-2)  # bf16 matmuls in both, summed in a different order


def test_auto_chunk_size_follows_the_vocabulary():
    assert auto_chunk_size(151_936) == 384  # 256 MiB / (4 B × 151,936) = 441 → multiple of 64
    assert auto_chunk_size(1_728) == 16_384  # capped
    assert auto_chunk_size(10**9) == 64  # floored


def _tiny(path):
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(path).train()


def _batch():
    ids = torch.tensor([[5, 9, 13, 2, 7, 11, 40, 3], [4, 8, 12, 3, 21, 17, 0, 0]])
    attn = torch.tensor([[1] * 8, [1] * 6 + [0, 0]])
    loss_mask = torch.tensor([[0, 0, 1, 1, 0, 1, 1, 1], [0, 1, 1, 0, 1, 1, 0, 0]])
    return ids, attn, loss_mask


def test_model_weighted_sum_matches_plain_full_logits_path_on_tiny_model(tiny_model_path):
    """Loss and every parameter's gradient equal the plain path (the one sharded models use)."""
    model = _tiny(tiny_model_path)
    ids, attn, loss_mask = _batch()
    weights = loss_mask[:, 1:].float() / loss_mask[:, 1:].sum()
    total, logprobs = model_weighted_logprob_sum(model, ids, weights, attn, chunk_size=3)
    (total * -1).backward()
    ours = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    ref_lp = _sharded_token_logprobs(model, ids, attn, None, False, None, False).logprobs  # full logits + log_softmax
    ref_total = (ref_lp * weights).sum()
    (ref_total * -1).backward()
    torch.testing.assert_close(total, ref_total, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(logprobs, ref_lp.detach() * (weights != 0), atol=1e-5, rtol=1e-5)
    for name, p in model.named_parameters():
        torch.testing.assert_close(ours[name], p.grad, atol=1e-5, rtol=1e-4, msg=name)
    labels = ids.masked_fill(loss_mask == 0, -100)
    hf = model(input_ids=ids, attention_mask=attn, labels=labels).loss
    torch.testing.assert_close(-total, hf, atol=1e-5, rtol=1e-5)


def test_model_token_logprobs_with_target_mask_matches_plain(tiny_model_path):
    model = _tiny(tiny_model_path)
    ids, attn, loss_mask = _batch()
    target = loss_mask[:, 1:]
    lp, _, ent, _ = model_token_logprobs(model, ids, attn, chunk_size=2, target_mask=target, return_entropy=True)
    ref_lp, _, ref_ent, _ = _sharded_token_logprobs(model, ids, attn, None, False, target, True)
    torch.testing.assert_close(lp, ref_lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent, ref_ent, atol=1e-5, rtol=1e-5)
    params = list(model.parameters())
    for a, b in zip(torch.autograd.grad(lp.sum(), params), torch.autograd.grad(ref_lp.sum(), params)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
