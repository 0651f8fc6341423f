"""``CausalLMSFT``: masked next-token cross-entropy for any HF causal LM (simulator and agent SFT)."""

from __future__ import annotations

import time
from typing import Any

import torch

from ..metrics.lm import TokenPerplexity
from ..rl.token_ops import model_weighted_logprob_sum
from .base import HFCausalLMModule
from .settings import LoraSettings, ModelSettings, OptimSettings

DEFAULT_OPTIM = OptimSettings()


class CausalLMSFT(HFCausalLMModule):
    """Supervised fine-tuning on batches of ``input_ids``, ``attention_mask``, ``loss_mask``.

    ``loss_mask[b, i] = 1`` marks token ``i`` as a target; the loss is the token-mean NLL over all
    targets of the batch. The model is loaded in :meth:`configure_model` with
    ``from_pretrained(model_path)`` so sharding strategies can wrap it.

    Args:
        model_path: HF model folder (or hub id where downloads are allowed).
        lora: LoRA settings; ``None`` trains every weight.
        optim: AdamW and learning-rate schedule.
        gradient_checkpointing: recompute decoder activations in the backward pass.
        dtype: storage dtype of the weights (``None`` = float32 master weights; use the Trainer's
            ``precision: bf16-mixed`` for bf16 compute).
        attn_implementation: passed to ``from_pretrained`` (``sdpa``, ``flash_attention_2``, ...).
        loss_chunk_size: positions projected to the vocabulary at once (bounds logits memory);
            ``None`` sizes it from the vocabulary so one float32 ``[chunk, V]`` buffer is ~256 MiB
            (384 positions for a 151,936-token vocabulary). See :mod:`~mimesis_pl.modules.fused_head`.
    """

    def __init__(
        self,
        model_path: str,
        lora: LoraSettings | None = None,
        optim: OptimSettings = DEFAULT_OPTIM,
        gradient_checkpointing: bool = False,
        dtype: str | None = None,
        attn_implementation: str | None = "sdpa",
        trust_remote_code: bool = False,
        loss_chunk_size: int | None = None,
    ) -> None:
        settings = ModelSettings(
            model_path=model_path,
            lora=lora,
            dtype=dtype,
            attn_implementation=attn_implementation,
            trust_remote_code=trust_remote_code,
            gradient_checkpointing=gradient_checkpointing,
            loss_chunk_size=loss_chunk_size,
        )
        super().__init__(settings=settings, optim=optim)
        self.save_hyperparameters()
        self.train_ppl = TokenPerplexity()
        self.val_ppl = TokenPerplexity()
        self._step_started: float | None = None

    # -- steps -------------------------------------------------------------------------------------

    def _nll(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # Only trained positions reach the vocabulary projection, and its gradient is formed in the
        # forward (fused head): as many projections as HF's labels= path, one [chunk, V] buffer.
        mask = batch["loss_mask"][:, 1:].float()
        n_tokens = mask.sum()
        weighted, _ = model_weighted_logprob_sum(
            self.model,
            batch["input_ids"],
            mask / n_tokens.clamp(min=1),
            batch["attention_mask"],
            batch.get("position_ids"),
            self.loss_chunk_size,
        )
        loss = -weighted
        return loss, loss.detach() * n_tokens, n_tokens

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, nll_sum, n_tokens = self._nll(batch)
        self.train_ppl(nll_sum, n_tokens)
        batch_size = batch["input_ids"].shape[0]
        self.log("train/loss", loss, prog_bar=True, batch_size=batch_size)
        self.log("train/ppl", self.train_ppl, on_step=True, on_epoch=False, batch_size=batch_size)
        self.log(
            "train/trained_token_fraction", n_tokens / batch["attention_mask"].sum().clamp(min=1), batch_size=batch_size
        )
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        loss, nll_sum, n_tokens = self._nll(batch)
        self.val_ppl(nll_sum, n_tokens)
        batch_size = batch["input_ids"].shape[0]
        self.log("val/loss", loss, prog_bar=True, batch_size=batch_size, sync_dist=True)
        self.log("val/ppl", self.val_ppl, on_step=False, on_epoch=True, batch_size=batch_size)

    # -- throughput and lr -------------------------------------------------------------------------

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self._step_started = time.perf_counter()

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._step_started is not None:
            elapsed = max(time.perf_counter() - self._step_started, 1e-9)
            tokens = batch["attention_mask"].sum().item()
            self.log("train/tokens_per_s", tokens / elapsed, on_step=True, batch_size=batch["input_ids"].shape[0])
        if self.trainer.optimizers:
            self.log("train/lr", self.trainer.optimizers[0].param_groups[0]["lr"], on_step=True)

    def on_fit_start(self) -> None:
        stats = getattr(self.trainer.datamodule, "stats", None)
        if stats and self.logger is not None:
            self.logger.log_metrics({f"data/{k}": float(v) for k, v in stats.items()}, step=0)
