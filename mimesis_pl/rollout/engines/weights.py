"""Turn a weight ``source`` (a module or a state dict) into HF-named full tensors for an engine.

In-process engines load weights by their Hugging Face parameter names
(``model.layers.0.self_attn.q_proj.weight``, ``lm_head.weight``). Training wraps modules and
shards parameters, so names and tensors are normalised here:

- ``torch.compile`` (``_orig_mod.``) and activation-checkpoint (``_checkpoint_wrapped_module.``)
  wrappers are dropped from names;
- ``DTensor`` values (FSDP2 shards) are gathered with ``full_tensor()`` — every rank must call
  this together, as with any collective;
- a PEFT model is refused with a message: merge the adapter into a copy first
  (``merge_and_unload``) or sync the adapter itself where the engine supports LoRA.
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
        state = source.state_dict()
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
