"""The committed tiny model, tokenizer and sample data are exactly what the builder makes."""

from __future__ import annotations

import json

import torch
from safetensors.torch import load_file

from mimesis_pl.assets import build_all

from .conftest import ASSETS


def test_rebuild_matches_committed_assets(tmp_path):
    written = build_all(tmp_path)
    assert written
    model_dir = tmp_path / "tiny-qwen3"
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "config.json",
        "generation_config.json",
        "mimesis_spec.json",
    ):
        assert (model_dir / name).read_bytes() == (ASSETS / "tiny-qwen3" / name).read_bytes(), name
    fresh, committed = (
        load_file(model_dir / "model.safetensors"),
        load_file(ASSETS / "tiny-qwen3" / "model.safetensors"),
    )
    assert fresh.keys() == committed.keys()
    for key in fresh:
        assert torch.equal(fresh[key], committed[key]), key
    for path in written:
        if path.is_file():
            rel = path.relative_to(tmp_path)
            assert path.read_bytes() == (ASSETS / rel).read_bytes(), rel


def test_tiny_model_loads_like_a_real_one(tiny_model_path, tiny_tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    config = model.config
    assert config.head_dim == 32 and not config.tie_word_embeddings  # what vLLM's CPU build needs
    assert config.vocab_size >= len(tiny_tokenizer)
    assert config.eos_token_id == tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert 1_000 <= len(tiny_tokenizer) <= 4_096
    for tag in ("<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>"):
        assert len(tiny_tokenizer(tag, add_special_tokens=False)["input_ids"]) == 1, tag
    ids = tiny_tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert out.shape[1] == ids["input_ids"].shape[1] + 4 or out[0, -1].item() == config.eos_token_id
    spec = json.loads((tiny_model_path / "mimesis_spec.json").read_text())
    assert spec["hidden_size"] == config.hidden_size
