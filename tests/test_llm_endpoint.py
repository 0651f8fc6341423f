"""One endpoint type for every served role and one API-key lookup (docs/decisions.md D10)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from mimesis_pl.csd import OpenAICoach
from mimesis_pl.envs.gyms.search.backends import HttpSearchBackend, HttpSearchSettings
from mimesis_pl.envs.gyms.tau.tool_runtime import HttpToolRuntime
from mimesis_pl.eval.episodes import OpenAIChatEpisodeRunner
from mimesis_pl.eval.replay import OpenAIChatAgent
from mimesis_pl.eval.simulator.chat_engine import ChatCompletionsEngineSettings
from mimesis_pl.llm import (
    ChatCompletionsClient,
    Endpoint,
    ServedChatSettings,
    api_key,
    http_url,
    openai_sdk_client,
    reference_role,
)
from mimesis_pl.rollout.engines import OpenAIEngine
from mimesis_pl.rollout.services import OpenAIUserSettings, SimulatorServices
from mimesis_pl.users import OpenAIUser

PACKAGE = Path(__file__).resolve().parents[1] / "mimesis_pl"
UNSET = "MIMESIS_TEST_UNSET_KEY"


def test_api_key_reads_the_named_variable_or_names_the_setting(monkeypatch):
    monkeypatch.setenv("MIMESIS_TEST_KEY", "sk-1")
    assert api_key(None, where="x") is None and api_key("", where="x") is None
    assert api_key("MIMESIS_TEST_KEY", where="x") == "sk-1"
    monkeypatch.setenv("MIMESIS_TEST_KEY", "")
    with pytest.raises(KeyError, match="judge.api_key_env names environment variable 'MIMESIS_TEST_KEY'"):
        api_key("MIMESIS_TEST_KEY", where="judge.api_key_env", error=KeyError)


def test_endpoint_route_and_url_check():
    e = Endpoint("http://h:8/v1/", "m")
    assert e.route("/chat/completions") == "http://h:8/v1/chat/completions"
    assert e.route("") == "http://h:8/v1/"
    assert http_url("https://h", "base_url") == "https://h"
    with pytest.raises(ValueError, match=r"coach.url must be an http\(s\) URL, got 'h:8'"):
        http_url("h:8", "coach.url")
    with pytest.raises(ValueError, match="max_retries must be >= 0, got -1"):
        Endpoint("http://h", max_retries=-1)


@pytest.mark.parametrize(
    "settings, url, expected",
    [
        (
            reference_role(ServedChatSettings, url="http://j/v1", model="judge", api_key_env="K", timeout_s=7.0),
            "http://j/v1",
            Endpoint("http://j/v1", "judge", "K", timeout_s=7.0, max_retries=5, retry_backoff_s=1.0),
        ),
        (
            ServedChatSettings(model="sim", base_url="http://s/v1", max_retries=4),
            "http://s/v1",
            Endpoint("http://s/v1", "sim", None, timeout_s=120.0, max_retries=4, retry_backoff_s=0.5),
        ),
        (
            ChatCompletionsEngineSettings(base_url="http://c/v1", model="soul", api_key_env="S"),
            "http://c/v1",
            Endpoint("http://c/v1", "soul", "S", timeout_s=300.0, max_retries=9, retry_backoff_s=1.0),
        ),
        (
            HttpSearchSettings(url="http://q/search", timeout_s=3.0, max_retries=1),
            "http://q/search",
            Endpoint("http://q/search", "", None, timeout_s=3.0, max_retries=1, retry_backoff_s=0.5),
        ),
    ],
)
def test_each_role_settings_map_onto_the_one_endpoint(settings, url, expected):
    assert Endpoint.of(settings, url) == expected
    assert Endpoint.of(settings, url, max_retries=0) == Endpoint(**{**vars(expected), "max_retries": 0})


def test_role_settings_give_their_endpoint():
    judge = reference_role(ServedChatSettings, url="http://j/v1", model="judge")
    assert judge.endpoint("judge") == Endpoint(
        "http://j/v1", "judge", timeout_s=300.0, max_retries=5, retry_backoff_s=1
    )
    with pytest.raises(ValueError, match="partner: ServedChatSettings needs url"):
        reference_role(ServedChatSettings).endpoint("partner")
    assert ServedChatSettings(base_url="http://s/v1").endpoint().url == "http://s/v1"


def test_served_clients_post_where_their_endpoint_says():
    client = ChatCompletionsClient(Endpoint("http://h/v1", "m"))
    assert client.url == "http://h/v1/chat/completions"
    assert ChatCompletionsClient(Endpoint("http://h/search"), path="").url == "http://h/search"
    user = OpenAIUser(base_url="http://u/v1/", model="sim", timeout_s=9.0)
    assert user.endpoint == Endpoint("http://u/v1", "sim", timeout_s=9.0)
    episode = user.for_episode("e1", "http://shim/ep/e1/v1")
    assert (episode.endpoint.url, episode.endpoint.timeout_s, user.base_url) == (
        "http://shim/ep/e1/v1",
        9.0,
        "http://u/v1",
    )
    assert OpenAICoach("http://c:1", "coach")._client.url == "http://c:1/v1/chat/completions"
    search = HttpSearchBackend(HttpSearchSettings(url="http://q/search"))
    assert search._client.url == "http://q/search"
    runtime = HttpToolRuntime("http://t:5/", timeout_s=4.0, max_retries=1)
    assert {route: c.url for route, c in runtime._clients.items()} == {
        route: f"http://t:5/{route}" for route in ("reset", "step", "reward", "close")
    }
    assert runtime._clients["step"].endpoint == Endpoint("http://t:5", timeout_s=4.0, max_retries=1)


def test_the_sdk_client_takes_the_endpoint_deadline_and_retries(monkeypatch):
    monkeypatch.setenv("MIMESIS_TEST_KEY", "sk-2")
    client = openai_sdk_client(Endpoint("http://a/v1", "m", "MIMESIS_TEST_KEY", timeout_s=5.0, max_retries=0))
    assert (str(client.base_url), client.api_key, client.timeout, client.max_retries) == (
        "http://a/v1/",
        "sk-2",
        5.0,
        0,
    )
    assert openai_sdk_client(Endpoint("http://a/v1", "m")).api_key == "EMPTY"
    asyncio.run(client.close())


@pytest.mark.parametrize(
    "build, where",
    [
        (lambda: OpenAIEngine("http://h", model="m", api_key_env=UNSET), "OpenAIEngine api_key_env"),
        (lambda: OpenAIChatAgent("http://h/v1", "m", api_key_env=UNSET), "OpenAIChatAgent api_key_env"),
        (lambda: OpenAIChatEpisodeRunner(None, "http://h/v1", "m", api_key_env=UNSET), "OpenAIChatEpisodeRunner"),
        (lambda: OpenAICoach("http://h/v1", "m", api_key_env=UNSET), "OpenAICoach api_key_env"),
        (
            lambda: SimulatorServices(OpenAIUserSettings(upstream_url="http://h/v1", api_key_env=UNSET)).start(),
            "users.api_key_env",
        ),
        (
            lambda: SimulatorServices(OpenAIUserSettings(shim_url="http://h", shim_token_env=UNSET)).shim_token,
            "users.shim_token_env",
        ),
    ],
)
def test_every_role_reads_its_key_through_the_one_lookup(monkeypatch, build, where):
    monkeypatch.delenv(UNSET, raising=False)
    with pytest.raises(ValueError, match=f"{where}.* names environment variable '{UNSET}', but {UNSET} is not set"):
        build()


def test_no_module_but_the_endpoint_reads_a_key_from_the_environment():
    reads = re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[")
    found = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "llm" / "endpoint.py" and reads.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_a_non_json_200_reply_is_retried():
    """Issue 35 item 12: a 200 whose body is not JSON (a proxy's page, a cut body) was a final failure."""
    import asyncio
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from mimesis_pl.llm import ChatCompletionsClient, Endpoint

    replies = [b"<html>upstream hiccup</html>", b"[1, 2]", json.dumps({"choices": []}).encode()]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(replies.pop(0))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        client = ChatCompletionsClient(Endpoint(url=url, max_retries=2, retry_backoff_s=0.0))

        async def ask():
            try:
                return await client.call({"model": "m", "messages": []})
            finally:
                await client.aclose()

        assert asyncio.run(ask()) == {"choices": []}
        assert replies == []  # three attempts: HTML, a JSON list, then the object
    finally:
        server.shutdown()
        server.server_close()
