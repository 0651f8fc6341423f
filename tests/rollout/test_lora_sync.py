"""A LoRA policy syncs its merged weights into an engine: the engine's log-probs equal the trainer's, the training
model is left bit for bit as it was, and a state dict holding adapter tensors is still refused."""

from __future__ import annotations

import asyncio
import copy

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from mimesis_pl.rollout.engines import HFEngine, SamplingParams
from mimesis_pl.rollout.engines.weights import hf_state_dict, merged_lora_state


def _lora_policy(path):
    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(path), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear")
    )
    with torch.no_grad():  # B starts at 0: give the adapter a real delta, as after some training
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    return model


def test_merged_state_equals_peft_merge_and_leaves_the_policy_unchanged(tiny_model_path):
    policy = _lora_policy(tiny_model_path)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    merged = merged_lora_state(policy)
    reference = copy.deepcopy(policy).merge_and_unload().state_dict()
    assert set(merged) == set(reference)
    for name, value in reference.items():
        torch.testing.assert_close(merged[name], value, rtol=0, atol=1e-6, msg=name)
    assert all(torch.equal(before[k], v) for k, v in policy.state_dict().items())
    assert hf_state_dict(policy).keys() == merged.keys()  # the engines' entry point merges too
    with pytest.raises(ValueError, match="LoRA adapter tensors"):
        hf_state_dict(policy.state_dict())


def test_hf_engine_copy_synced_from_a_lora_policy_scores_like_the_policy(tiny_model_path, tiny_tokenizer):
    policy = _lora_policy(tiny_model_path).eval()
    copy_for_generation = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    engine = HFEngine(copy_for_generation, tiny_tokenizer)
    engine.update_weights(policy)
    prompt = tiny_tokenizer.encode("hello there, how are you")
    result = asyncio.run(engine.generate(prompt, SamplingParams(max_new_tokens=6, temperature=0.0)))
    ids = torch.tensor([prompt + result.token_ids])
    with torch.no_grad():
        logits = policy(input_ids=ids).logits[0, len(prompt) - 1 : -1]
    trainer_lp = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(result.token_ids)[:, None])[:, 0]
    torch.testing.assert_close(torch.tensor(result.logprobs), trainer_lp, rtol=0, atol=1e-4)
    engine.close()
