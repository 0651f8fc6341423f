"""``OpenAIEngine``: token-in/token-out generation from a served model (vLLM or SGLang server).

Used for models that do not train in this job: the frozen user simulator, the coach, the judge.
It posts the prompt as token ids to ``/v1/completions`` and reads the completion's token ids from
the response. Text is never re-tokenised: ``decode → encode`` is not the identity for byte-level
BPE, and an agent trained on re-tokenised ids learns from sequences it never produced.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from ...llm import Endpoint, bearer_headers
from .base import GenerationResult, SamplingParams, check_prompt, cut_at_stop


class OpenAIEngineError(RuntimeError):
    """The server could not be reached, answered with an error, or answered without token ids."""


@dataclass
class _Burst:
    # aiohttp sessions and asyncio semaphores belong to one event loop, and a session must be
    # closed from inside its loop. A burst lives while requests are in flight on one loop and
    # closes its session when the last one ends, so nothing leaks when the loop goes away.
    loop: asyncio.AbstractEventLoop
    session: aiohttp.ClientSession
    semaphore: asyncio.Semaphore
    active: int = 0


class OpenAIEngine:
    """Generate through an OpenAI-compatible ``/v1/completions`` endpoint, by token ids.

    Args:
        base_url: server root, e.g. ``http://127.0.0.1:8000`` (a trailing ``/v1`` is accepted).
        model: the served model name.
        api_key: bearer token, if the server wants one.
        api_key_env: name of an environment variable holding the key (keeps secrets out of YAML);
            read once here. Give at most one of ``api_key`` and ``api_key_env``.
        timeout: seconds allowed for one request, end to end.
        max_concurrency: requests in flight at once (the server batches them).
        ignore_eos: ask the server not to stop at the model's EOS unless it is in
            ``stop_token_ids`` — the stop semantics every engine here shares. vLLM and SGLang
            accept it; set ``False`` for servers that reject unknown fields.
        extra_body: more request fields, sent as given (e.g. ``{"min_p": 0.05}``).

    Each request sends ``prompt`` (a list of ids), ``max_tokens``, ``temperature``, ``top_p``,
    ``top_k`` (``-1`` = off), neutral ``min_p``/``repetition_penalty``, ``stop_token_ids``,
    ``seed`` (when set), ``logprobs=1`` and
    ``return_token_ids=true`` (vLLM ≥ 0.10.2), and reads ``choices[0].token_ids`` and
    ``choices[0].logprobs.token_logprobs``. A response without token ids is an error.

    ``update_weights`` raises ``NotImplementedError`` (a served model is frozen here);
    ``sleep``/``wake_up`` are no-ops; ``close`` is a no-op too, because sessions close themselves
    when idle.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 600.0,
        max_concurrency: int = 256,
        ignore_eos: bool = True,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if api_key and api_key_env:
            raise ValueError("OpenAIEngine: give api_key or api_key_env, not both")
        if max_concurrency < 1:
            raise ValueError(f"OpenAIEngine: max_concurrency must be >= 1, got {max_concurrency}")
        root = base_url.rstrip("/").removesuffix("/v1")
        # One attempt per request: this engine does not retry (max_retries=0).
        self.endpoint = Endpoint(f"{root}/v1", model, api_key_env, timeout_s=timeout, max_retries=0)
        api_key = api_key or self.endpoint.key(where="OpenAIEngine api_key_env")
        self.url = self.endpoint.route("/completions")
        self.model = model
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.ignore_eos = ignore_eos
        self.extra_body = dict(extra_body or {})
        self._headers = bearer_headers(api_key)
        self._burst: _Burst | None = None

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        body = self._body(check_prompt(prompt_ids), params)
        burst = self._enter_burst()
        try:
            async with burst.semaphore:
                reply = await self._post(burst.session, body)
        finally:
            burst.active -= 1
            if burst.active == 0:
                if self._burst is burst:
                    self._burst = None
                await burst.session.close()
        return self._parse(reply, params)

    def update_weights(self, source: Any) -> None:
        raise NotImplementedError(
            f"OpenAIEngine serves a frozen model ({self.model} at {self.url}); weights cannot be pushed to it. "
            "Train with an in-process engine (hf, vllm, sglang) instead"
        )

    def sleep(self) -> None:
        pass

    def wake_up(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _body(self, prompt_ids: list[int], params: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt_ids,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            # Sent even when neutral: a server fills fields left out from the model's
            # generation_config (Qwen3 ships top_k=20), which would change what is sampled.
            "top_k": params.top_k,
            "min_p": 0.0,
            "repetition_penalty": 1.0,
            "stop_token_ids": list(params.stop_token_ids),
            "logprobs": 1,
            "return_token_ids": True,
            "skip_special_tokens": False,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if self.ignore_eos:
            body["ignore_eos"] = True
        body.update(self.extra_body)
        return body

    def _enter_burst(self) -> _Burst:
        loop = asyncio.get_running_loop()
        if self._burst is None or self._burst.loop is not loop:
            session = aiohttp.ClientSession(headers=self._headers, timeout=aiohttp.ClientTimeout(total=self.timeout))
            self._burst = _Burst(loop, session, asyncio.Semaphore(self.max_concurrency))
        self._burst.active += 1
        return self._burst

    async def _post(self, session: aiohttp.ClientSession, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with session.post(self.url, json=body) as response:
                text = await response.text()
                if response.status != 200:
                    raise OpenAIEngineError(
                        f"{self.url} answered HTTP {response.status} for model {self.model!r}: {text[:500]}"
                    )
        except TimeoutError as error:
            raise OpenAIEngineError(f"{self.url} did not answer within {self.timeout} s") from error
        except aiohttp.ClientError as error:
            raise OpenAIEngineError(f"cannot reach {self.url}: {error}") from error
        try:
            return json.loads(text)
        except ValueError as error:
            raise OpenAIEngineError(f"{self.url} answered with a body that is not JSON: {text[:200]!r}") from error

    def _parse(self, reply: dict[str, Any], params: SamplingParams) -> GenerationResult:
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not choices:
            raise OpenAIEngineError(f"{self.url} answered without choices: {str(reply)[:300]}")
        choice = choices[0]
        token_ids = choice.get("token_ids")
        if token_ids is None:
            raise OpenAIEngineError(
                f"{self.url} returned no completion token ids (choices[0].token_ids). Serve with vLLM >= 0.10.2, "
                "which returns them for return_token_ids=true; text is never re-tokenised here"
            )
        reason = choice.get("finish_reason")
        if reason not in ("stop", "length"):
            raise OpenAIEngineError(f"{self.url} finished the completion with finish_reason={reason!r}")
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
        if logprobs is not None and len(logprobs) != len(token_ids):
            raise OpenAIEngineError(f"{self.url} returned {len(logprobs)} logprobs for {len(token_ids)} token ids")
        kept, cut_reason = cut_at_stop(token_ids, params)
        if len(kept) != len(token_ids):
            raise OpenAIEngineError(
                f"{self.url} returned {len(token_ids)} ids past a stop id or max_tokens={params.max_new_tokens}"
            )
        # The server's "stop" also covers an EOS it stopped on when ignore_eos is off.
        finish = "stop" if cut_reason == "stop" else reason
        return GenerationResult(
            [int(t) for t in token_ids],
            None if logprobs is None else [float(x) for x in logprobs],
            finish,
        )
