"""Write HF checkpoints (``save_pretrained`` folders) during and after training.

The folders load with ``AutoModelForCausalLM.from_pretrained`` and can be served by vLLM: weights
(LoRA merged, or the adapter alone), tokenizer with its chat template, generation config and any
processor files of the source model.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

log = logging.getLogger(__name__)

_PASSTHROUGH_FILES = (
    "generation_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "mimesis_spec.json",
)


def full_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The whole state dict on CPU, gathered from FSDP2 shards when the module is sharded."""
    if any(type(p).__name__ == "DTensor" for p in module.parameters()):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(module, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


def merged_lora_state_dict(peft_model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Base-model state dict with every LoRA delta added to its weight; the live model is untouched."""
    from peft.tuners.lora import LoraLayer

    base = peft_model.get_base_model()
    state: dict[str, torch.Tensor] = {}
    for key, value in full_state_dict(base).items():
        if "lora_" in key:
            continue
        state[key.replace(".base_layer.", ".")] = value
    for name, layer in base.named_modules():
        if isinstance(layer, LoraLayer):
            with torch.no_grad():
                for adapter in layer.active_adapters:
                    if adapter in layer.lora_A:
                        delta = layer.get_delta_weight(adapter).detach().to("cpu", state[f"{name}.weight"].dtype)
                        state[f"{name}.weight"] = state[f"{name}.weight"] + delta
    return state


def _swap_in(staged: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by the finished ``staged`` folder with renames, so no reader sees a mix of two exports."""
    if not out_dir.exists():
        os.replace(staged, out_dir)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    os.replace(out_dir, retired / out_dir.name)
    os.replace(staged, out_dir)
    shutil.rmtree(retired)


def export_hf(
    model: torch.nn.Module,
    out_dir: str | Path,
    tokenizer: Any = None,
    source_dir: str | Path | None = None,
    merge_lora: bool = True,
    is_main_process: bool = True,
    overwrite: bool = False,
) -> Path:
    """Save ``model`` as a HF folder; with LoRA, merged weights or the adapter (``merge_lora=False``).

    The export is written into a fresh hidden folder beside ``out_dir`` and renamed into place when complete,
    so ``out_dir`` never holds files of two exports (a stale ``adapter_config.json`` next to full weights is
    applied by ``from_pretrained``). An existing ``out_dir`` is replaced only with ``overwrite=True``.
    """
    out_dir = Path(out_dir)
    is_peft = hasattr(model, "peft_config")
    if is_peft and merge_lora:  # gathering the weights is a collective under FSDP: every rank gets here
        state, target = merged_lora_state_dict(model), model.get_base_model()
    else:
        state, target = (None, model) if is_peft else (full_state_dict(model), model)
    if not is_main_process:
        return out_dir
    if out_dir.exists() and not overwrite:  # checked by the rank that writes (others may see its export)
        raise FileExistsError(f"{out_dir}: an export is already there; pass overwrite=True to replace it")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        if state is None:
            target.save_pretrained(staged)  # peft: adapter_config.json + adapter_model.safetensors
        else:
            target.save_pretrained(staged, state_dict=state)
        if tokenizer is not None:
            tokenizer.save_pretrained(staged)
        if source_dir is not None:
            for name in _PASSTHROUGH_FILES:
                src = Path(source_dir) / name
                if src.is_file() and not (staged / name).exists():
                    shutil.copy2(src, staged / name)
        _swap_in(staged, out_dir)
    finally:
        if staged.exists():
            shutil.rmtree(staged)
    return out_dir


class HFExportCallback(pl.Callback):
    """Export a HF folder every ``every_n_steps`` optimiser steps and at the end of fitting.

    Folders: ``{dirpath}/step-{N}`` and ``{dirpath}/final``; ``dirpath`` defaults to
    ``{log_dir}/hf``. The tokenizer — and with it the chat template the run trained with
    (``chat_template.jinja``, what vLLM/SGLang serve by default) — is the DataModule's, else the
    module's (the RL modules render rollouts with theirs), else the model path's.

    Exports this run did not write are never replaced unless ``overwrite: true``: fitting into a ``dirpath``
    that already holds ``final`` or ``step-*`` stops before training (decision A70 in docs/decisions.md).
    """

    def __init__(
        self,
        dirpath: str | None = None,
        every_n_steps: int = 0,
        merge_lora: bool = True,
        save_on_train_end: bool = True,
        overwrite: bool = False,
    ) -> None:
        self.dirpath = dirpath
        self.every_n_steps = every_n_steps
        self.merge_lora = merge_lora
        self.save_on_train_end = save_on_train_end
        self.overwrite = overwrite
        self.exported: list[Path] = []

    def state_dict(self) -> dict[str, Any]:
        """The exports this run wrote, so that a run resumed from its checkpoint knows them as its own."""
        return {"exported": [str(p) for p in self.exported]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.exported = [Path(p) for p in state_dict.get("exported", [])]

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.ckpt_path is None:  # a resumed run checks once its exports are restored (on_train_start)
            self._refuse_foreign(trainer)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.ckpt_path is not None:
            self._refuse_foreign(trainer)

    def _refuse_foreign(self, trainer: pl.Trainer) -> None:
        """Stop before training when ``dirpath`` holds exports this run (or the run it resumes) did not write."""
        root = self._root(trainer)
        if self.overwrite or not root.is_dir():
            return
        foreign = sorted(
            p.name
            for p in root.iterdir()
            if (p.name == "final" or p.name.startswith("step-")) and p not in self.exported
        )
        if foreign:
            raise FileExistsError(
                f"{root}: already holds exports of another run ({', '.join(foreign)}); choose another "
                "dirpath, remove them, or set the HFExportCallback's overwrite: true to replace them"
            )

    def _root(self, trainer: pl.Trainer) -> Path:
        if self.dirpath is not None:
            return Path(self.dirpath)
        return Path(trainer.log_dir or trainer.default_root_dir) / "hf"

    def _export(self, trainer: pl.Trainer, module: pl.LightningModule, name: str) -> None:
        tokenizer = getattr(trainer.datamodule, "tokenizer", None) if trainer.datamodule is not None else None
        tokenizer = tokenizer if tokenizer is not None else getattr(module, "tokenizer", None)
        source = getattr(module, "model_path", None)
        if tokenizer is None and source is not None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(source)
        out = export_hf(
            module.model,
            self._root(trainer) / name,
            tokenizer=tokenizer,
            source_dir=source,
            merge_lora=self.merge_lora,
            is_main_process=trainer.is_global_zero,
            overwrite=self.overwrite or (self._root(trainer) / name) in self.exported,
        )
        if trainer.is_global_zero:
            self.exported.append(out)
            log.info("exported HF checkpoint to %s", out)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        if self.every_n_steps > 0 and step > 0 and step % self.every_n_steps == 0:
            if not self.exported or self.exported[-1].name != f"step-{step}":
                self._export(trainer, pl_module, f"step-{step}")

    def on_train_end(self, trainer, pl_module) -> None:
        if self.save_on_train_end:
            self._export(trainer, pl_module, "final")
