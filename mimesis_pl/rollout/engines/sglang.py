"""``SGLangEngine``: an in-process ``sglang.Engine`` (GPU only), token ids in and out.

SGLang's offline engine runs its scheduler in a subprocess and talks to it from an asyncio loop
that the ``Engine`` object creates and keeps. Every call into it therefore goes through one
dedicated thread that owns that loop; concurrent ``generate`` calls are collected by the
micro-batcher and sent as one batched ``Engine.generate`` call, which SGLang schedules with its own
continuous batching.

SGLang reads one setting from the environment: ``SGLANG_RETURN_ORIGINAL_LOGPROB``. Without it the
returned logprobs are taken after temperature scaling; the constructor sets it to ``1`` when it is
unset so logprobs are the model's raw distribution, as for every engine here.

Not runnable on CPU machines (SGLang needs CUDA and ``sgl_kernel``); see shared/RUNTIME.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from .base import GenerationResult, SamplingParams, check_prompt, cut_at_stop, with_drawn_seed
from .batching import MicroBatcher
from .settings import EngineSettings, EngineTarget
from .weights import hf_state_dict

INSTALL_HINT = "pip install 'mimesis-pl[sglang]' on a CUDA machine (SGLang has no CPU build)"

T = TypeVar("T")


@dataclass
class SGLangEngineSettings(EngineSettings):
    """An in-process SGLang engine (GPU only); receives the policy's weights after each optimiser step.

    Args:
        model_path: the weights to start from; ``None`` takes the policy's (or the agent's) model path.
        dtype: ``auto``, ``bfloat16``, ``float16`` or ``float32``.
        mem_fraction_static: share of the GPU's memory for weights and KV cache (split between the ranks on it).
        context_length: longest prompt + completion; ``None`` takes the model's.
        random_seed: engine seed (requests without one draw theirs from torch's global RNG).
        tp_size: GPUs per engine.
        enable_memory_saver: release weights and KV cache between rollouts.
        max_batch_size: most requests sent to SGLang in one call.
        batch_wait_ms: how long a request arriving at an idle engine waits for others.
        weight_chunk_bytes: weight updates are sent in chunks of about this size.
        engine_kwargs: further ``sglang.Engine`` arguments, passed as given.
    """

    model_path: str | None = None
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    mem_fraction_static: float = 0.5
    context_length: int | None = None
    random_seed: int = 0
    tp_size: int = 1
    enable_memory_saver: bool = False
    max_batch_size: int = 256
    batch_wait_ms: float = 2.0
    weight_chunk_bytes: int = 1 << 30
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    def build(self, target: EngineTarget) -> SGLangEngine:
        return SGLangEngine(self.weights_path(target.model_path), self, target.ranks_per_device)


def sglang_mem_fraction(mem_fraction_static: float, ranks_per_device: int = 1) -> float:
    """This engine's share of the GPU when ``ranks_per_device`` engines share it."""
    if ranks_per_device < 1:
        raise ValueError(f"ranks_per_device must be >= 1, got {ranks_per_device}")
    return mem_fraction_static / ranks_per_device


def sglang_engine_kwargs(
    settings: SGLangEngineSettings, model_path: str | Path, ranks_per_device: int = 1
) -> dict[str, Any]:
    """``sglang.Engine`` arguments of ``settings`` for the weights at ``model_path`` — the one place an
    :class:`SGLangEngineSettings` becomes them (docs/decisions.md D11); ``engine_kwargs`` are passed as given, last."""
    s = settings
    kwargs: dict[str, Any] = {
        "model_path": str(model_path),
        "dtype": s.dtype,
        "mem_fraction_static": sglang_mem_fraction(s.mem_fraction_static, ranks_per_device),
        "random_seed": s.random_seed,
        "tp_size": s.tp_size,
        "enable_memory_saver": s.enable_memory_saver,
        "skip_tokenizer_init": True,  # ids in, ids out: no detokenizer work, no text to misuse
    }
    if s.context_length is not None:
        kwargs["context_length"] = s.context_length
    kwargs.update(s.engine_kwargs)
    return kwargs


class SGLangEngine:
    """Generate with ``sglang.Engine`` in this process.

    Args:
        model_path: a Hugging Face model folder (or hub id when online); a ``model_path`` in ``settings`` is
            not read here (:meth:`SGLangEngineSettings.build` resolves it).
        settings: the engine's arguments (:class:`~mimesis_pl.rollout.engines.SGLangEngineSettings`, documented
            there; ``None``: its defaults). With ``enable_memory_saver`` :meth:`sleep` releases weights and KV
            cache (``release_memory_occupation``) and :meth:`wake_up` takes them back; ``update_weights`` sends
            tensors in chunks of about ``weight_chunk_bytes``, so a full state dict is never serialised at once.
        ranks_per_device: training processes whose engines share one GPU; each takes
            ``mem_fraction_static / ranks_per_device`` (the rollout stage sets it).

    ``update_weights(source)`` takes an ``nn.Module`` (its ``state_dict()``) or a state dict with
    Hugging Face parameter names (FSDP2 ``DTensor`` shards are gathered), sent with
    ``Engine.update_weights_from_tensor``; the radix cache is flushed after the last chunk.
    """

    def __init__(
        self, model_path: str | Path, settings: SGLangEngineSettings | None = None, ranks_per_device: int = 1
    ) -> None:
        settings = settings or SGLangEngineSettings()
        try:
            import sglang
        except ImportError as error:
            raise ImportError(
                f"SGLangEngine needs SGLang, which is not importable here ({error}); {INSTALL_HINT}"
            ) from error
        # Read by the scheduler subprocess, which inherits this process's environment at launch.
        os.environ.setdefault("SGLANG_RETURN_ORIGINAL_LOGPROB", "1")
        kwargs = sglang_engine_kwargs(settings, model_path, ranks_per_device)
        self.memory_saver = settings.enable_memory_saver
        self.weight_chunk_bytes = settings.weight_chunk_bytes
        # The Engine binds the asyncio loop of the thread that builds it; all later calls run there.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mimesis-sglang")
        self._engine = self._call(lambda: sglang.Engine(**kwargs))
        self._batcher = MicroBatcher(
            self._generate_batch, max_batch_size=settings.max_batch_size, batch_wait_ms=settings.batch_wait_ms
        )

    @property
    def batches_run(self) -> int:
        return self._batcher.batches_run

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        return await self._batcher.submit(check_prompt(prompt_ids), with_drawn_seed(params))

    def update_weights(self, source: Any) -> None:
        chunks = _chunks(list(hf_state_dict(source).items()), self.weight_chunk_bytes)
        for index, chunk in enumerate(chunks):
            # Flushing the radix cache once, after the last chunk, is enough.
            flush = index == len(chunks) - 1
            self._call(partial(self._engine.update_weights_from_tensor, named_tensors=chunk, flush_cache=flush))

    def sleep(self) -> None:
        if self.memory_saver:
            self._call(self._engine.release_memory_occupation)

    def wake_up(self) -> None:
        if self.memory_saver:
            self._call(self._engine.resume_memory_occupation)

    def close(self) -> None:
        self._batcher.close()
        if self._engine is not None:
            self._call(self._engine.shutdown)
            self._engine = None
        self._thread.shutdown(wait=True)

    def _call(self, fn: Callable[[], T]) -> T:
        return self._thread.submit(fn).result()

    def _generate_batch(self, requests: Sequence[tuple[list[int], SamplingParams]]) -> list[GenerationResult]:
        sampling = [_sglang_params(p) for _, p in requests]
        outputs = self._call(
            partial(
                self._engine.generate,
                input_ids=[ids for ids, _ in requests],
                sampling_params=sampling,
                return_logprob=True,
            )
        )
        return [_to_result(output, p) for output, (_, p) in zip(outputs, requests)]


def _sglang_params(p: SamplingParams) -> dict[str, Any]:
    return {
        "max_new_tokens": p.max_new_tokens,
        "temperature": p.temperature,
        "top_p": p.top_p,
        "top_k": p.top_k,  # SGLang also spells "off" as -1
        "stop_token_ids": list(p.stop_token_ids),
        "ignore_eos": True,
        "sampling_seed": p.seed,
    }


def _to_result(output: dict[str, Any], params: SamplingParams) -> GenerationResult:
    meta = output.get("meta_info", {})
    finish = (meta.get("finish_reason") or {}).get("type")
    if finish not in ("stop", "length"):
        raise RuntimeError(f"SGLang finished a request with finish_reason={meta.get('finish_reason')!r}")
    token_ids = [int(t) for t in output["output_ids"]]
    entries = meta.get("output_token_logprobs")  # [(logprob, token_id, text), ...]
    logprobs = None if entries is None else [float(entry[0]) for entry in entries]
    _, reason = cut_at_stop(token_ids, params)
    return GenerationResult(token_ids, logprobs, reason)


def _chunks(items: list[tuple[str, Any]], max_bytes: int) -> list[list[tuple[str, Any]]]:
    chunks: list[list[tuple[str, Any]]] = [[]]
    size = 0
    for name, tensor in items:
        nbytes = tensor.numel() * tensor.element_size()
        if chunks[-1] and size + nbytes > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append((name, tensor))
        size += nbytes
    return chunks
