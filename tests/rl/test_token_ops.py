"""``model_token_logprobs``: the ``target_mask`` path and the sharded path give the plain path's outputs.

The plain path projects every position through the chunked head of an unsharded model. Both other
paths must agree with it: the masked path on the selected positions (and 0 elsewhere), the sharded
path (full logits through the model's own forward) everywhere, for log-probs, hidden states, entropy
and gradients.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM

from mimesis_pl.causal_lm import shard_fsdp2
from mimesis_pl.rl.token_ops import TokenLogprobs, _is_sharded, _sharded_token_logprobs, model_token_logprobs

TOL = {"atol": 1e-5, "rtol": 1e-5}


@pytest.fixture(scope="module")
def model(tiny_model_path):
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()


def _batch():
    ids = torch.tensor([[5, 9, 13, 2, 7, 11, 40, 3], [4, 8, 12, 3, 21, 17, 0, 0]])
    attn = torch.tensor([[1] * 8, [1] * 6 + [0, 0]])
    target = torch.tensor([[0, 1, 1, 0, 1, 1, 1], [1, 1, 0, 1, 1, 0, 0]])  # [B, T-1]
    return ids, attn, target


def _plain(model, ids, attn) -> TokenLogprobs:
    return model_token_logprobs(model, ids, attn, chunk_size=3, return_hidden=True, return_entropy=True)


def test_returns_a_named_tuple_with_none_for_what_was_not_asked(model):
    ids, attn, _ = _batch()
    out = model_token_logprobs(model, ids, attn)
    assert isinstance(out, TokenLogprobs)
    assert out.logprobs.shape == (2, 7) and out.logprobs.dtype == torch.float32
    assert out.hidden is None and out.entropy is None
    full = _plain(model, ids, attn)
    assert full.hidden.shape == (2, 8, model.config.hidden_size) and full.entropy.shape == (2, 7)


def test_target_mask_path_equals_plain_path_on_selected_positions_and_zero_elsewhere(model):
    ids, attn, target = _batch()
    plain = _plain(model, ids, attn)
    masked = model_token_logprobs(
        model, ids, attn, chunk_size=3, return_hidden=True, target_mask=target, return_entropy=True
    )
    keep = target.bool()
    torch.testing.assert_close(masked.logprobs, torch.where(keep, plain.logprobs, 0.0), **TOL)
    torch.testing.assert_close(masked.entropy, torch.where(keep, plain.entropy, 0.0), **TOL)
    torch.testing.assert_close(masked.hidden, plain.hidden, **TOL)
    assert masked.entropy.requires_grad is False
    params = [p for p in model.parameters() if p.requires_grad]
    weights = torch.rand(target.shape, generator=torch.Generator().manual_seed(1)) * keep
    for a, b in zip(
        torch.autograd.grad((masked.logprobs * weights).sum(), params),
        torch.autograd.grad((plain.logprobs * weights).sum(), params),
        strict=True,
    ):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("with_mask", [False, True])
def test_sharded_path_equals_plain_path(model, with_mask):
    ids, attn, target = _batch()
    plain = _plain(model, ids, attn)
    mask = target if with_mask else None
    sharded = _sharded_token_logprobs(model, ids, attn, None, True, mask, True)
    keep = target.bool() if with_mask else torch.ones_like(target, dtype=torch.bool)
    torch.testing.assert_close(sharded.logprobs, torch.where(keep, plain.logprobs, 0.0), **TOL)
    torch.testing.assert_close(sharded.entropy, torch.where(keep, plain.entropy, 0.0), **TOL)
    torch.testing.assert_close(sharded.hidden, plain.hidden, **TOL)


def test_head_scores_other_ids_at_chosen_positions_like_the_full_log_softmax(model):
    """``return_head``: the log-probs of any K ids at chosen columns, with gradient into the forward, equal the full
    log-softmax there, on the chunked path and on the sharded one; no positions gives an empty ``[0, K]``."""
    ids, attn, target = _batch()
    b_idx, cols = torch.tensor([0, 0, 1]), torch.tensor([2, 5, 3])
    want_ids = torch.tensor([[3, 9, 0], [40, 40, 1], [12, 2, 7]])
    params = [p for p in model.parameters() if p.requires_grad]
    full = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float().log_softmax(-1)
    ref = full[b_idx, cols].gather(-1, want_ids)
    ref_grads = torch.autograd.grad(ref.sum() * 2 - ref[:, 0].sum(), params)
    chunked = model_token_logprobs(model, ids, attn, chunk_size=2, target_mask=target, return_head=True).head
    sharded = _sharded_token_logprobs(model, ids, attn, None, False, target, False, True).head
    for head in (chunked, sharded):
        got = head.at(b_idx, cols, want_ids)
        torch.testing.assert_close(got, ref, **TOL)
        for a, b in zip(torch.autograd.grad(got.sum() * 2 - got[:, 0].sum(), params), ref_grads, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
        empty = head.at(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), want_ids[:0])
        assert empty.shape == (0, 3)
    assert model_token_logprobs(model, ids, attn).head is None


def test_an_fsdp2_sharded_model_takes_the_sharded_path_with_the_same_outputs(tiny_model_path):
    """A real FSDP2 model (a world of one process on gloo) is detected and scored like the plain model."""
    ids, attn, target = _batch()
    reference = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    plain = _plain(reference, ids, attn)
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("gloo", init_method=(Path(tmp) / "pg").as_uri(), rank=0, world_size=1)
        try:
            from torch.distributed.device_mesh import init_device_mesh

            model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
            shard_fsdp2(model, init_device_mesh("cpu", (1,)))
            assert _is_sharded(model)
            out = model_token_logprobs(model, ids, attn, return_hidden=True, target_mask=target, return_entropy=True)
        finally:
            dist.destroy_process_group()
    keep = target.bool()
    torch.testing.assert_close(out.logprobs.detach(), torch.where(keep, plain.logprobs, 0.0).detach(), **TOL)
    torch.testing.assert_close(out.entropy, torch.where(keep, plain.entropy, 0.0), **TOL)
    torch.testing.assert_close(out.hidden.detach(), plain.hidden.detach(), **TOL)
