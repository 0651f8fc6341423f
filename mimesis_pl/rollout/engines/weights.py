"""Turn a weight ``source`` (a module or a state dict) into HF-named full tensors for an engine.

In-process engines load weights by their Hugging Face parameter names
(``model.layers.0.self_attn.q_proj.weight``, ``lm_head.weight``). Training wraps modules and
shards parameters, so names and tensors are normalised here:

- ``torch.compile`` (``_orig_mod.``) and activation-checkpoint (``_checkpoint_wrapped_module.``)
  wrappers are dropped from names;
- ``DTensor`` values (FSDP2 shards) are gathered with ``full_tensor()`` — every rank must call
  this together, as with any collective;
- a PEFT LoRA model is synced merged: each adapted layer's weight is sent as base + B·A·scaling, computed
  without touching the training model (:func:`merged_lora_state`; docs/decisions.md A93); a state dict that
  holds LoRA tensors is refused with a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

_WRAPPER_PARTS = ("_orig_mod.", "_checkpoint_wrapped_module.", "_fsdp_wrapped_module.")


def hf_state_dict(source: Any) -> dict[str, torch.Tensor]:
    """Full, detached tensors keyed by HF parameter name.

    Args:
        source: an ``nn.Module`` (its ``state_dict()`` is taken) or a mapping of name → tensor.
    """
    if isinstance(source, nn.Module):
        state = merged_lora_state(source) if _has_lora(source) else source.state_dict()
    elif isinstance(source, Mapping):
        state = source
    else:
        raise TypeError(
            f"weights source must be an nn.Module or a state dict (name -> tensor), got {type(source).__name__}"
        )
    lora = [name for name in state if "lora_" in name]
    if lora:
        raise ValueError(
            f"weights source holds LoRA adapter tensors (e.g. {lora[0]!r}); merge the adapter into a copy "
            "of the base model (peft merge_and_unload) and pass that, or pass the merged state dict"
        )
    out: dict[str, torch.Tensor] = {}
    for name, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"weights source entry {name!r} is a {type(value).__name__}, not a tensor")
        for part in _WRAPPER_PARTS:
            name = name.replace(part, "")
        if hasattr(value, "full_tensor"):  # DTensor shard from FSDP2 / tensor parallel
            value = value.full_tensor()
        out[name] = value.detach()
    return out


def _has_lora(model: nn.Module) -> bool:
    return any(hasattr(m, "lora_A") and hasattr(m, "base_layer") for m in model.modules())


def merged_lora_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """HF-named weights of a PEFT LoRA model with every active adapter merged in; ``model`` is left unchanged.

    The adapted layer ``x.base_layer.weight`` becomes ``x.weight`` = base + Σ_adapters ``get_delta_weight`` (peft's
    own B·A·scaling, transposed for ``fan_in_fan_out``); ``lora_*`` tensors are dropped and peft's
    ``base_model.model.`` prefix is removed, so an engine loads the names of the plain model.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    deltas: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for name, module in base.named_modules():
            if not (hasattr(module, "lora_A") and hasattr(module, "base_layer")):
                continue
            if any(getattr(module, "use_dora", {}).get(a, False) for a in module.active_adapters):
                raise ValueError(f"LoRA layer {name!r} uses DoRA: its merged weight is not base + B·A; sync a merge")
            adapters = [a for a in module.active_adapters if a in module.lora_A]
            if adapters:
                deltas[f"{name}.base_layer.weight"] = sum(module.get_delta_weight(a) for a in adapters)
        out: dict[str, torch.Tensor] = {}
        for name, value in base.state_dict().items():
            if "lora_" in name:
                continue
            if hasattr(value, "full_tensor") and name in deltas:
                raise ValueError(f"{name!r} is sharded: merging a LoRA delta into FSDP shards is not supported")
            merged = value.detach() + deltas[name].to(value.dtype) if name in deltas else value
            out[name.replace(".base_layer.", ".")] = merged
    return out
