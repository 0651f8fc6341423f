"""``python -m mimesis_pl.cli serve`` as a process: SIGTERM lets an in-flight request finish, then exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import openai

from .conftest import TINY

REPO = Path(__file__).resolve().parents[2]


def test_sigterm_finishes_the_in_flight_request_then_exits_0():
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "mimesis_pl.cli", "serve", str(TINY), "--port", "0", "--device", "cpu"]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = process.stdout.readline()
        match = re.search(r"serving (\S+) \((sha256:\w+)\) on (http://\S+/v1)", ready)
        assert match, ready + process.stderr.read()[-2000:]
        name, url = match.group(1), match.group(3)
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        replies: list = []
        ask = threading.Thread(
            target=lambda: replies.append(
                client.chat.completions.create(
                    model=name, messages=[{"role": "user", "content": "hi"}], max_tokens=60, temperature=0
                )
            )
        )
        ask.start()
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:  # wait until the request is generating
            time.sleep(0.05)
            if _in_flight(url):
                break
        process.send_signal(signal.SIGTERM)
        ask.join(120)
        assert process.wait(60) == 0, process.stderr.read()[-2000:]
        (reply,) = replies
        assert reply.usage.completion_tokens == 60 and reply.choices[0].finish_reason == "length"
        assert "stopped" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _in_flight(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=10) as response:
        return json.loads(response.read())["in_flight"]
