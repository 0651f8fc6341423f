"""``HFCausalLMModule``: what every module here shares — a HF causal LM loaded in ``configure_model``
(optionally LoRA, sharded with FSDP2 under ``ModelParallelStrategy``) and AdamW with a schedule."""

from __future__ import annotations

import lightning.pytorch as pl
import torch

from ..model_paths import check_model_path
from ..models import build_optimizer, load_causal_lm, shard_fsdp2
from .settings import LoraSettings, OptimSettings


class HFCausalLMModule(pl.LightningModule):
    """Base class; see :class:`~mimesis_pl.modules.CausalLMSFT` for the arguments."""

    def __init__(
        self,
        model_path: str,
        lora: LoraSettings | None = None,
        optim: OptimSettings = OptimSettings(),
        gradient_checkpointing: bool = False,
        dtype: str | None = None,
        attn_implementation: str | None = "sdpa",
        trust_remote_code: bool = False,
        loss_chunk_size: int | None = None,
    ) -> None:
        super().__init__()
        self.model_path = check_model_path(model_path, "model.init_args.model_path")
        self.lora = lora
        self.optim = optim
        self.gradient_checkpointing = gradient_checkpointing
        self.dtype_name = dtype
        self.attn_implementation = attn_implementation
        self.trust_remote_code = trust_remote_code
        self.loss_chunk_size = loss_chunk_size
        self.model: torch.nn.Module | None = None

    def configure_model(self) -> None:
        if self.model is not None:
            return
        self.model = load_causal_lm(
            self.model_path,
            dtype=self.dtype_name,
            attn_implementation=self.attn_implementation,
            trust_remote_code=self.trust_remote_code,
            gradient_checkpointing=self.gradient_checkpointing,
            lora=self.lora,
        )
        mesh = self._device_mesh_or_none()
        if mesh is not None:
            shard_fsdp2(self.model, mesh["data_parallel"] if "data_parallel" in (mesh.mesh_dim_names or ()) else mesh)

    def _device_mesh_or_none(self):
        try:
            return self.device_mesh
        except AttributeError:
            return None

    def configure_optimizers(self):
        optimizer, scheduler = build_optimizer(self.model, self.optim, int(self.trainer.estimated_stepping_batches))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
