import math

import lightning.pytorch as pl
import pytest
import torch
from transformers import AutoModelForCausalLM

from mimesis_pl.causal_lm import lr_multiplier
from mimesis_pl.data import JsonlChatSFTDataModule
from mimesis_pl.modules import CausalLMSFT, LoraSettings, OptimSettings, export_hf
from mimesis_pl.rl.token_ops import chunked_token_logprobs, model_token_logprobs

from ..conftest import ASSETS


def test_lr_multiplier_hand_worked():
    # warm-up 2 of 10 steps: 1/2, 2/2; then cosine over 8 steps down to min 0.1
    assert lr_multiplier(0, 10, 2, "cosine", 0.1) == 0.5
    assert lr_multiplier(1, 10, 2, "cosine", 0.1) == 1.0
    assert lr_multiplier(2, 10, 2, "cosine", 0.1) == 1.0  # progress 0
    assert math.isclose(lr_multiplier(6, 10, 2, "cosine", 0.1), 0.1 + 0.9 * 0.5)  # progress 1/2
    assert math.isclose(lr_multiplier(10, 10, 2, "cosine", 0.1), 0.1)
    assert math.isclose(lr_multiplier(6, 10, 2, "linear", 0.0), 0.5)
    assert lr_multiplier(7, 10, 0, "constant", 0.0) == 1.0


def test_chunked_logprobs_match_full_softmax_and_gradients():
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 50, bias=False)
    hidden = torch.randn(2, 7, 8, requires_grad=True)
    targets = torch.randint(0, 50, (2, 7))
    ours = chunked_token_logprobs(hidden, head, targets, chunk_size=3)
    full = head(hidden).log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)
    assert torch.allclose(ours, full, atol=1e-6)
    (g_ours,) = torch.autograd.grad(ours.sum(), hidden)
    (g_full,) = torch.autograd.grad(full.sum(), hidden)
    assert torch.allclose(g_ours, g_full, atol=1e-6)


def test_masked_loss_equals_hf_cross_entropy(tiny_model_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    ids = torch.tensor([[5, 9, 13, 2, 7, 11], [4, 8, 12, 3, 0, 0]])
    attn = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    loss_mask = torch.tensor([[0, 0, 1, 1, 0, 1], [0, 1, 1, 0, 0, 0]])
    module = CausalLMSFT(str(tiny_model_path))
    module.model = model
    loss, nll_sum, n = module._nll({"input_ids": ids, "attention_mask": attn, "loss_mask": loss_mask})
    labels = ids.masked_fill(loss_mask == 0, -100)
    ref = model(input_ids=ids, attention_mask=attn, labels=labels).loss
    assert n.item() == 5
    assert torch.allclose(loss, ref, atol=1e-5)


def _fit(module, tmp_path, steps=3):
    dm = JsonlChatSFTDataModule(
        files=[str(ASSETS / "data/chat_sft/train.jsonl")], tokenizer_path=str(ASSETS / "tiny-qwen3"), batch_size=4
    )
    trainer = pl.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        use_distributed_sampler=False,
    )
    trainer.fit(module, datamodule=dm)
    return dm


@pytest.mark.parametrize("merge", [True, False])
def test_lora_export_reloads_with_the_trained_behaviour(tmp_path, tiny_model_path, merge):
    module = CausalLMSFT(str(tiny_model_path), lora=LoraSettings(r=4, alpha=8), optim=OptimSettings(lr=5e-2))
    dm = _fit(module, tmp_path)
    trainable = [n for n, p in module.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    ids = torch.tensor([[5, 9, 13, 2, 7, 11]])
    module.model.eval()
    with torch.no_grad():
        want = module.model(input_ids=ids).logits
    out = export_hf(
        module.model, tmp_path / "export", tokenizer=dm.tokenizer, source_dir=tiny_model_path, merge_lora=merge
    )
    if merge:
        reloaded = AutoModelForCausalLM.from_pretrained(out)
        assert not any("lora" in k for k in reloaded.state_dict())
    else:
        from peft import PeftModel

        assert (out / "adapter_config.json").is_file()
        reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_path), out)
    reloaded.eval()
    with torch.no_grad():
        got = reloaded(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-5)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    with torch.no_grad():
        assert not torch.allclose(base(input_ids=ids).logits, want, atol=1e-3)  # training did change the model
    assert (out / "tokenizer.json").is_file() and (out / "generation_config.json").is_file()


def test_model_token_logprobs_shape(tiny_model_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    ids = torch.tensor([[5, 9, 13, 2]])
    assert model_token_logprobs(model, ids).logprobs.shape == (1, 3)
