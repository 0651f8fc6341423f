"""``bin/serve_simulator.sh``: vLLM as a module with the export's template, thinking mode and name; the HF route
with the shim in front, live on CPU."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import openai

from .conftest import TINY

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bin" / "serve_simulator.sh"


def _env() -> dict[str, str]:
    import sys

    return {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_vllm_route_runs_vllm_as_a_module_with_template_thinking_and_name(tmp_path):
    export = tmp_path / "sim_rl" / "version_0" / "hf" / "final"
    export.parent.mkdir(parents=True)
    export.symlink_to(TINY, target_is_directory=True)
    args = ["bash", str(SCRIPT), str(export), "--enable-thinking", "true", "--shim-port", "8710", "--dry-run"]
    done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    vllm, shim = done.stdout.strip().splitlines()
    assert " -m vllm.entrypoints.openai.api_server " in vllm and not vllm.startswith("vllm ")
    assert "--served-model-name sim_rl-final" in vllm  # not "final"
    assert f"--chat-template {export}/chat_template.jinja" in vllm
    assert "'{\"enable_thinking\": true}'" in vllm and "--reasoning-parser qwen3" in vllm
    assert "-m mimesis_pl.cli shim --upstream http://127.0.0.1:8000/v1" in shim and "--port 8710" in shim


def test_the_hf_route_serves_behind_the_shim_and_stops_on_sigterm():
    port, shim_port = _free_port(), _free_port()
    args = ["bash", str(SCRIPT), str(TINY), "--engine", "hf", "--port", str(port), "--shim-port", str(shim_port)]
    process = subprocess.Popen(
        args, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        lines = [process.stdout.readline() for _ in range(2)]  # the server's ready line, then the script's
        assert lines[1].startswith("simulator "), lines
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{shim_port}/ep/e1/v1", api_key="unused", max_retries=0)
        deadline = time.monotonic() + 60
        while True:  # the shim starts after the model server answers
            try:
                reply = client.chat.completions.create(
                    model="tiny-qwen3", messages=[{"role": "user", "content": "hi"}], max_tokens=4
                )
                break
            except openai.APIConnectionError:
                assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()[-2000:]
                time.sleep(0.2)
        assert reply.choices[0].message.content is not None
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, process.stderr.read()[-2000:]
        for p in (port, shim_port):  # both children are gone
            with socket.socket() as sock:
                assert sock.connect_ex(("127.0.0.1", p)) != 0
    finally:
        if process.poll() is None:  # a failed check: stop the script and its children (one session)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
