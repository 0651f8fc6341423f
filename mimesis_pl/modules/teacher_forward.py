"""The CSD teacher forward: the policy's own weights scoring packed teacher rows, without gradient."""

from __future__ import annotations

import torch

from ..rl.teacher import PackedTeacherRows, gather_teacher_logprobs, teacher_logits_to_keep, token_logprobs_from_logits


@torch.no_grad()
def teacher_logprobs(model: torch.nn.Module, packed: PackedTeacherRows, chunk_rows: int = 4, fill: float = 0.0) -> torch.Tensor:
    """``[B, L]`` teacher log-prob of every student token that has a row (``fill`` elsewhere).

    Rows are forwarded ``chunk_rows`` at a time and only the trailing logits the maps need are kept
    (``logits_to_keep``), so memory is ``chunk_rows × keep × V``, not ``R × W × V``.
    """
    device = next(model.parameters()).device
    keep = teacher_logits_to_keep(packed)
    if keep == 0:
        return torch.full(packed.teacher_mask.shape, fill, dtype=torch.float32, device=device)
    pieces = []
    for start in range(0, packed.input_ids.shape[0], chunk_rows):
        ids = packed.input_ids[start : start + chunk_rows].to(device)
        logits = model(
            input_ids=ids,
            attention_mask=packed.attention_mask[start : start + chunk_rows].to(device),
            position_ids=packed.position_ids[start : start + chunk_rows].to(device),
            logits_to_keep=keep,
            use_cache=False,
        ).logits
        pieces.append(token_logprobs_from_logits(logits, ids))
    return gather_teacher_logprobs(torch.cat(pieces), packed, fill=fill)


def check_no_dropout(config, where: str = "model config") -> None:
    """Refuse a model with non-zero dropout: teacher and student must see identical forwards."""
    seen = set()

    def walk(cfg, path: str) -> None:
        if id(cfg) in seen:
            return
        seen.add(id(cfg))
        for name, value in vars(cfg).items():
            if "dropout" in name and isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0:
                raise ValueError(
                    f"{where}: {path}{name} = {value}; CSD scores the same tokens twice with the same weights, "
                    "so dropout must be 0 (set it to 0.0 in the model config)"
                )
            if name.endswith("_config") and value is not None and hasattr(value, "__dict__"):
                walk(value, f"{path}{name}.")

    walk(config, "")
