"""Running the shim: ServerThread lifecycle, client URL building, and the CLI as a real process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shim_scripted_upstream import directive

from mimesis_pl.shim import PrivilegedShim, ServerThread, ShimClient, ShimError, shim_root
from mimesis_pl.shim.serve import build_parser
from mimesis_pl.shim.service import is_loopback_host
from mimesis_pl.shim.upstream import completions_url

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "given, root",
    [
        ("http://127.0.0.1:8710", "http://127.0.0.1:8710"),
        ("http://127.0.0.1:8710/", "http://127.0.0.1:8710"),
        ("http://127.0.0.1:8710/v1/", "http://127.0.0.1:8710"),
        ("http://host:8710/prefix/v1", "http://host:8710/prefix"),
    ],
)
def test_episode_urls_survive_trailing_slashes(given, root):
    assert shim_root(given) == root
    assert ShimClient(given).episode_base_url("ep-1") == f"{root}/ep/ep-1/v1"


@pytest.mark.parametrize(
    "given, url",
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/chat/completions"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1/chat/completions"),
        ("http://h:8000/v1/chat/completions", "http://h:8000/v1/chat/completions"),
        ("https://h/api/v2", "https://h/api/v2/chat/completions"),
    ],
)
def test_upstream_url_normalisation(given, url):
    assert completions_url(given) == url


def test_bad_upstream_url_is_refused():
    with pytest.raises(ValueError, match="must look like http"):
        PrivilegedShim("127.0.0.1:8000")


def test_is_loopback_host():
    assert all(map(is_loopback_host, ["127.0.0.1", "localhost", "::1", "[::1]", "127.3.2.1"]))
    assert not any(map(is_loopback_host, ["0.0.0.0", "10.1.2.3", "example.org"]))


def test_server_thread_lifecycle_and_port_in_use(upstream):
    thread = ServerThread(PrivilegedShim(upstream.base_url, shutdown_timeout_s=1.0), timeout_s=10.0)
    url = thread.start()
    assert ShimClient(url).health() is True
    port = int(url.rsplit(":", 1)[1])
    clash = ServerThread(PrivilegedShim(upstream.base_url, port=port), timeout_s=10.0)
    with pytest.raises(OSError, match=f"cannot bind the shim to 127.0.0.1:{port}"):
        clash.start()
    thread.stop()
    thread.stop()  # idempotent
    with pytest.raises(ShimError) as info:
        ShimClient(url, timeout_s=2.0).health()
    assert info.value.status == 0 and "unreachable" in str(info.value)


def test_shim_refuses_itself_as_upstream():
    port = _free_port()
    with pytest.raises(ValueError, match="is the shim's own address"):
        ServerThread(PrivilegedShim(f"http://localhost:{port}/v1", port=port), timeout_s=10.0).start()


def test_cli_parser_flags():
    args = build_parser().parse_args(
        ["--upstream", "http://127.0.0.1:8000/v1", "--port", "0", "--ttl-s", "5", "--max-episodes", "7"]
    )
    assert (args.host, args.port, args.ttl_s, args.max_episodes) == ("127.0.0.1", 0, 5.0, 7)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_serves_until_sigterm(upstream, client_for):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHIM_TEST_TOKEN": "tok"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mimesis_pl.shim",
            "--upstream",
            upstream.base_url,
            "--port",
            str(port),
            "--token-env",
            "SHIM_TEST_TOKEN",
            "--max-episodes",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()  # the ready line; the process prints it only once bound
        assert line.startswith(f"mimesis-pl shim: serving http://127.0.0.1:{port} -> {upstream.base_url}")
        shims = ShimClient(f"http://127.0.0.1:{port}", token="tok")
        client_for(shims.episode_base_url("ep-cli"), api_key="tok").chat.completions.create(
            model="sim", messages=directive(say="hi", think="private")
        )
        assert [e["reasoning"] for e in shims.privileged("ep-cli")] == ["private"]
        assert shims.stats()["store"]["limits"]["max_episodes"] == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


def test_cli_names_a_missing_secret_variable():
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_SHIM_KEY"}
    env["PYTHONPATH"] = str(REPO)
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mimesis_pl.shim",
            "--upstream",
            "http://127.0.0.1:1/v1",
            "--upstream-api-key-env",
            "NO_SUCH_SHIM_KEY",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2 and "NO_SUCH_SHIM_KEY is not set" in proc.stderr
    assert time.monotonic() - started < 60


def test_stop_with_an_upstream_call_in_flight_keeps_to_the_shutdown_bound(upstream, client_for):
    """aiohttp alone waits the shutdown timeout twice (graceful, then after cancelling); we keep to one."""
    import threading

    shim = ServerThread(PrivilegedShim(upstream.base_url, shutdown_timeout_s=2.0), timeout_s=30.0)
    shim.start()
    client = client_for(ShimClient(shim.base_url).episode_base_url("ep-slow"), timeout=60.0)
    outcome: list[str] = []

    def call() -> None:
        try:
            client.chat.completions.create(model="sim", messages=directive(say="late", think="t", delay=30))
            outcome.append("answered")
        except Exception as exc:  # noqa: BLE001 - any failure is what the caller of a stopped shim sees
            outcome.append(type(exc).__name__)

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.5)  # the request is now waiting on the upstream
    started = time.monotonic()
    shim.stop()
    took = time.monotonic() - started
    caller.join(10)
    assert 1.9 < took < 3.5, took  # 2 s to finish, then cancelled; aiohttp alone took 4 s here
    assert outcome and outcome[0] != "answered"
