"""A key a server echoes in its error never reaches a stored file, a log line or an error text (issue 35, item 10;
decision D22)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mimesis_pl.eval.io import append_line_durable, write_json_atomic
from mimesis_pl.llm import ChatCompletionsClient, ServedChatSettings
from mimesis_pl.llm.secrets import REMOVED, redact_secrets, remember_secret

KEY = "sk-test-9f8e7d6c5b4a"


class _EchoesKey(BaseHTTPRequestHandler):
    """Refuses every request, quoting the key it was sent (as some providers' 401 pages do)."""

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        sent = self.headers.get("Authorization", "").removeprefix("Bearer ")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {sent}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def echo_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoesKey)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_redaction_replaces_every_remembered_key_and_leaves_short_values():
    remember_secret("sk-other-0123456789")
    remember_secret("abc")  # too short to redact safely (it would cut words): left alone
    assert redact_secrets("a sk-other-0123456789 b abc") == f"a {REMOVED} b abc"


def test_a_key_echoed_by_a_server_is_in_no_error_file_or_log(echo_url, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("ECHO_KEY", KEY)
    settings = ServedChatSettings(base_url=echo_url, model="m", api_key_env="ECHO_KEY", max_retries=0)

    class Down(Exception):
        pass

    client = ChatCompletionsClient(settings.endpoint("judge"), Down)

    async def ask():
        try:
            await client.call({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        finally:
            await client.aclose()

    with pytest.raises(Down) as failure:
        asyncio.run(ask())
    text = str(failure.value)
    assert "Incorrect API key provided" in text and KEY not in text and REMOVED in text

    # whatever text carries it on is redacted where it is stored or logged
    leaked = f"judge failed: Incorrect API key provided: {KEY}"
    append_line_durable(tmp_path / "trials.jsonl", json.dumps({"error": leaked}))
    write_json_atomic(tmp_path / "results.json", {"error": leaked})
    with caplog.at_level(logging.WARNING):
        logging.getLogger("mimesis_pl.test").warning("trial failed: %s", leaked)
        try:
            raise RuntimeError(leaked)
        except RuntimeError:
            logging.getLogger("mimesis_pl.test").exception("with a traceback")
    for stored in (tmp_path / "trials.jsonl", tmp_path / "results.json"):
        assert KEY not in stored.read_text() and REMOVED in stored.read_text()
    assert KEY not in caplog.text and REMOVED in caplog.text
