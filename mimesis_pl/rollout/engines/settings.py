"""Which rollout engine runs, as a typed YAML object chosen by ``class_path``.

Each class holds one engine's own arguments and builds it when the job starts (engines load weights
or start servers, so the config object stays cheap)::

    engine:
      class_path: mimesis_pl.rollout.engines.VLLMEngineSettings
      init_args: {dtype: bfloat16, gpu_memory_utilization: 0.6}

An engine that loads weights takes ``model_path: null`` to mean the policy's (training) or the agent's
(evaluation) model path, so a config names the model once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import RolloutEngine


@dataclass
class EngineTarget:
    """What the job hands an engine when it builds it.

    Args:
        model_path: the weights the engine serves unless its own ``model_path`` is set.
        tokenizer: the policy's tokenizer (HF pads with its pad id).
        model: the in-process causal LM the HF engine generates with (``None`` for the others).
        ranks_per_device: training processes whose engines share one device's memory.
        lora_rank: the policy's LoRA rank when it trains an adapter (``None``: full weights); an engine that syncs
            only the adapter sizes its adapter slots by it.
    """

    model_path: str
    tokenizer: Any = None
    model: Any = None
    ranks_per_device: int = 1
    lora_rank: int | None = None


class EngineSettings:
    """Base of the engine choices (``class_path`` in YAML)."""

    #: The engine generates on the training module's own weights (no weight sync, one process).
    generates_on_policy_weights: bool = False

    def build(self, target: EngineTarget) -> RolloutEngine:
        raise NotImplementedError

    def weights_path(self, default: str) -> str:
        """The model folder this engine loads: its own ``model_path`` or ``default``."""
        return getattr(self, "model_path", None) or default


@dataclass
class HFEngineSettings(EngineSettings):
    """HF ``generate`` in this process on the policy's own weights (the CPU-friendly default).

    Args:
        max_batch_size: most sequences in one ``generate`` call.
        batch_wait_ms: how long a request arriving at an idle engine waits for others to batch with.
    """

    max_batch_size: int = 64
    batch_wait_ms: float = 2.0

    generates_on_policy_weights = True

    def build(self, target: EngineTarget) -> RolloutEngine:
        from .hf import HFEngine

        if target.model is None:
            raise ValueError("HFEngineSettings needs the in-process model to generate with (EngineTarget.model)")
        return HFEngine(
            target.model, target.tokenizer, max_batch_size=self.max_batch_size, batch_wait_ms=self.batch_wait_ms
        )


@dataclass
class OpenAIEngineSettings(EngineSettings):
    """A served, frozen model driven token-in/token-out through ``/v1/completions`` (no weight updates).

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model's name.
        api_key_env: environment variable holding the key (``None``: no auth header).
        timeout: seconds allowed for one request.
        max_concurrency: requests in flight at once.
        ignore_eos: ask the server not to stop at EOS unless it is a stop id (set ``false`` for servers
            that reject unknown fields).
        extra_body: more request fields, sent as given.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 600.0
    max_concurrency: int = 256
    ignore_eos: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)

    def build(self, target: EngineTarget) -> RolloutEngine:
        from .openai import OpenAIEngine

        return OpenAIEngine(
            self.base_url,
            self.model,
            api_key_env=self.api_key_env,
            timeout=self.timeout,
            max_concurrency=self.max_concurrency,
            ignore_eos=self.ignore_eos,
            extra_body=dict(self.extra_body),
        )
