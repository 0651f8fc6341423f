"""``HFCausalLMModule``: what every module here shares — a HF causal LM loaded in ``configure_model``
(optionally LoRA, sharded with FSDP2 under ``ModelParallelStrategy``) and AdamW with a schedule."""

from __future__ import annotations

import lightning.pytorch as pl
import torch

from ..causal_lm import build_optimizer, load_causal_lm, shard_fsdp2
from ..model_paths import check_model_path
from .settings import ModelSettings, OptimSettings


class HFCausalLMModule(pl.LightningModule):
    """Base class: the weights of ``settings`` (see :class:`~mimesis_pl.modules.settings.ModelSettings`)
    and AdamW with ``optim``; ``model_path_key`` names the YAML key of the model path in errors."""

    def __init__(
        self, *, settings: ModelSettings, optim: OptimSettings, model_path_key: str = "model.init_args.model_path"
    ) -> None:
        super().__init__()
        self.model_path = check_model_path(settings.model_path, model_path_key)
        self.lora = settings.lora
        self.optim = optim
        self.gradient_checkpointing = settings.gradient_checkpointing
        self.dtype_name = settings.dtype
        self.attn_implementation = settings.attn_implementation
        self.trust_remote_code = settings.trust_remote_code
        self.loss_chunk_size = settings.loss_chunk_size
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
