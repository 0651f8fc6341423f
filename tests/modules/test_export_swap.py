"""An export folder never mixes two runs' files, and an export the run did not write is not replaced unasked."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from mimesis_pl.modules import HFExportCallback, export_hf


def _lora_model(path):
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(path), LoraConfig(r=4, lora_alpha=8))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.fill_(0.05)  # a non-zero delta, so a stale adapter changes the logits
    return model


def test_full_export_over_a_lora_export_leaves_no_adapter(tmp_path, tiny_model_path):
    out = tmp_path / "hf" / "final"
    export_hf(_lora_model(tiny_model_path), out, merge_lora=False)
    assert (out / "adapter_config.json").is_file()
    full = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    export_hf(full, out, overwrite=True)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("adapter")) == []
    assert [p.name for p in out.parent.iterdir()] == ["final"]  # no staging or retired folder left behind
    ids = torch.tensor([[5, 9, 13, 2, 7, 11]])
    with torch.no_grad():
        want = full(input_ids=ids).logits
        got = AutoModelForCausalLM.from_pretrained(out).eval()(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-6)


def test_an_existing_export_is_not_replaced_unasked(tmp_path, tiny_model_path):
    out = tmp_path / "final"
    out.mkdir()
    (out / "adapter_config.json").write_text("{}")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_hf(AutoModelForCausalLM.from_pretrained(tiny_model_path), out)
    assert [p.name for p in out.iterdir()] == ["adapter_config.json"]


def test_callback_refuses_before_training_when_dirpath_holds_another_runs_export(tmp_path):
    (tmp_path / "hf" / "final").mkdir(parents=True)
    callback = HFExportCallback(dirpath=str(tmp_path / "hf"))
    trainer = pl.Trainer(logger=False, enable_checkpointing=False, default_root_dir=tmp_path)
    with pytest.raises(FileExistsError, match="another run .*final"):
        callback.on_fit_start(trainer, pl.LightningModule())
    HFExportCallback(dirpath=str(tmp_path / "hf"), overwrite=True).on_fit_start(trainer, pl.LightningModule())
