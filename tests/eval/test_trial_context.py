"""Every trial's cache key holds everything that can change its answer (issue 35, item 4; decision E25)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mimesis_pl.eval.trials.context import gym_context, resource_digests, trial_context, users_identity
from mimesis_pl.llm import ServedChatSettings, reference_role
from mimesis_pl.llm.served import models_url, revision_in, role_revision, served_revision
from mimesis_pl.rollout.services import OpenAIUserSettings, ScriptedHTTPUserSettings

from .test_eval_cli import SHORT_TURNS, run_cli, tensorboard_scalars


class _Models:
    """A loopback ``GET /v1/models`` answering ``listing`` (``None``: 404, as a server without the route)."""

    def __init__(self, listing):
        outer = self
        self.listing, self.auth = listing, []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.auth.append(self.headers.get("Authorization"))
                body = json.dumps(outer.listing).encode() if outer.listing is not None else b"no such route"
                self.send_response(200 if outer.listing is not None and self.path == "/v1/models" else 404)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def models_server():
    servers = []

    def start(listing):
        servers.append(_Models(listing))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _ours(revision):  # what `mimesis-pl serve` lists
    return {"object": "list", "data": [{"id": "sim", "object": "model", "revision": revision}]}


def test_the_served_revision_is_read_from_v1_models(models_server):
    assert models_url("http://h:1/v1/") == "http://h:1/v1/models" and models_url("http://h:1") == "http://h:1/v1/models"
    assert revision_in(_ours("sha256:ab"), "sim") == "sha256:ab"
    assert revision_in(_ours("sha256:ab"), "other") is None
    assert revision_in({"data": [{"id": "sim"}]}, "sim") is None  # vLLM lists no revision
    ours = models_server(_ours("sha256:ab"))
    assert served_revision(ours.url, "sim", api_key="k1") == "sha256:ab"
    assert ours.auth == ["Bearer k1"]
    assert role_revision("v7", ours.url, "sim") == "sha256:ab"  # the server's word wins
    vllm = models_server({"object": "list", "data": [{"id": "sim", "object": "model"}]})
    assert role_revision("v7", vllm.url, "sim") == "v7"  # none served: the setting
    assert role_revision(None, models_server(None).url, "sim") == "unversioned"
    assert role_revision("v7", "http://127.0.0.1:9/v1", "sim") == "v7"  # nobody there: the setting, with a warning


def test_the_users_key_holds_their_sampling_address_and_served_revision(models_server):
    base = users_identity(ScriptedHTTPUserSettings())
    assert users_identity(ScriptedHTTPUserSettings(temperature=0.5)) != base
    assert users_identity(ScriptedHTTPUserSettings(max_tokens=64)) != base
    assert users_identity(ScriptedHTTPUserSettings(timeout_s=5.0)) == base  # how long to wait is not an answer
    first, second = models_server(_ours("sha256:aa")), models_server(_ours("sha256:aa"))
    a = users_identity(OpenAIUserSettings(upstream_url=first.url, model="sim"))
    assert a["revision"] == "sha256:aa"
    assert users_identity(OpenAIUserSettings(upstream_url=second.url, model="sim")) != a  # another address
    first.listing = _ours("sha256:bb")  # new weights behind the same name and address
    assert users_identity(OpenAIUserSettings(upstream_url=first.url, model="sim"))["revision"] == "sha256:bb"


def test_an_edited_resource_file_changes_the_key(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "a"}\n')
    options = {"search": {"class_path": "BM25SearchSettings", "init_args": {"corpus_path": str(corpus)}}}
    before = gym_context(options)
    assert set(before["resources"]) == {str(corpus)}
    corpus.write_text('{"text": "b"}\n')
    assert gym_context(options) != before
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "s.json").write_text("[]")
    digests = resource_digests({"scenarios_path": str(folder), "note": str(folder)})
    assert list(digests) == [str(folder)]  # a folder only under a path-like key
    (folder / "s.json").write_text("[1]")
    assert resource_digests({"scenarios_path": str(folder)}) != digests
    assert resource_digests({"name": "travel", "n": 3}) == {}


def test_the_context_keeps_each_gyms_resources_apart(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("x")
    context = trial_context(ScriptedHTTPUserSettings(), {"SearchGym": {"corpus_path": str(corpus)}, "TurtleGym": {}}, 1)
    assert context["seed"] == 1 and set(context["per_gym"]) == {"SearchGym"}


def test_another_seed_runs_the_trials_again(tmp_path):
    out, runs = tmp_path / "agent", tmp_path / "runs"
    run_cli("configs/tiny/eval_agent.yaml", out, runs, *SHORT_TURNS)
    run_cli("configs/tiny/eval_agent.yaml", out, runs, *SHORT_TURNS, "--seed_everything", "1")
    again = tensorboard_scalars(runs / "tiny_eval_agent" / "version_1")
    assert again["eval/trials_run"] == 20 and again["eval/trials_reused"] == 0
    run_cli("configs/tiny/eval_agent.yaml", out, runs, *SHORT_TURNS, "--seed_everything", "1")
    third = tensorboard_scalars(runs / "tiny_eval_agent" / "version_2")
    assert third["eval/trials_run"] == 0 and third["eval/trials_reused"] == 20
    # which rows of the shared trials.jsonl are this run's (the learning study's compare reads them: E27)
    hashes = json.loads((out / "results.json").read_text())["config"]["gym_config_hashes"]
    rows = [json.loads(line)["key"] for line in (out / "trials.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and sum(hashes[r["gym"]] == r["gym_config_hash"] for r in rows) == 20


def test_soul_keys_on_every_request_field_and_the_served_revision_of_its_roles(models_server):
    """Item 5 (E26): a role's enable_thinking and extra_body change SOUL's settings hash; a role's served revision
    joins its identity (its revision setting where the server reports none)."""
    from mimesis_pl.eval.simulator.soul import suite as soul
    from mimesis_pl.tasks.clients import RoleSettings

    simulator = soul.SoulSimulatorSettings(model_path="assets/tiny-qwen3", max_new_tokens=4)

    def settings_hash(**judge):
        roles = RoleSettings(judge=reference_role(**judge))
        return soul.SoulSuite(simulator, roles=roles, seeds=[0]).settings_hash()

    base = settings_hash()
    assert settings_hash(enable_thinking=False) != base
    assert settings_hash(extra_body={"top_k": 5}) != base
    assert settings_hash(timeout_s=3.0) == base

    server = models_server(_ours("sha256:aa"))
    judge = reference_role(ServedChatSettings, url=server.url, model="sim", revision="v1")
    assert soul.endpoint_identity(judge) == f"openai:sim@{server.url}#sha256:aa"
    server.listing = {"data": [{"id": "sim"}]}  # now a server that reports none: the setting
    assert soul.endpoint_identity(judge) == f"openai:sim@{server.url}#v1"
    assert soul.endpoint_identity(judge, "2025-01") == f"openai:sim@{server.url}#2025-01"  # role_revisions first


def test_a_checkpoint_simulator_is_keyed_by_its_weights_content(tmp_path):
    import shutil

    from mimesis_pl.rollout import CheckpointUserSettings

    from ..conftest import REPO

    folder = tmp_path / "sim"
    shutil.copytree(REPO / "assets" / "tiny-qwen3", folder)
    before = users_identity(CheckpointUserSettings(model_dir=str(folder)))
    (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes()[:-4] + b"\0\0\0\0")
    after = users_identity(CheckpointUserSettings(model_dir=str(folder)))
    assert before["revision"].startswith("sha256:") and before["revision"] != after["revision"]
    assert {k: v for k, v in before.items() if k != "revision"} == {k: v for k, v in after.items() if k != "revision"}
