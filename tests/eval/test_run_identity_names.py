"""Neutral identity names (``model_under_test``, ``model_revision``, ``partner``) with the old written names
still read and still written where a reader or a cache digest depends on them (docs/decisions.md D8)."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.eval.report import episode_results
from mimesis_pl.eval.simulator.suite import suite_identity
from mimesis_pl.eval.trials import RunIdentity, TrialCache, TrialKey, TrialRecord

IDENTITY = RunIdentity(model_under_test="tiny-agent", model_revision="abc123", partner="scripted-user")
OLD_IDENTITY = {"agent_model": "tiny-agent", "agent_revision": "abc123", "simulator": "scripted-user"}
# A key as the code before the rename wrote it, and the digest it computed for it (by hand from e15fda2).
OLD_KEY = {
    "gym": "function",
    "task_id": "task-0",
    "trial": 0,
    **OLD_IDENTITY,
    "gym_config_hash": "cfg0",
    "harness_version": "1",
    "content_hash": "c0ffee",
}
OLD_DIGEST = "be81e96eb8b1f53651175f3c972f77e43824fd0dbf7c7833f00edfb3758254da"


def test_an_identity_written_with_the_old_names_reads_as_the_neutral_one():
    assert RunIdentity.from_dict(OLD_IDENTITY) == IDENTITY
    assert RunIdentity.from_dict({"model_under_test": "tiny-agent", "model_revision": "abc123", "partner": "x"}) == (
        RunIdentity("tiny-agent", "abc123", "x")
    )
    with pytest.raises(ValueError, match=r"'simulator' \(the old name of 'partner'\) is 'a' but 'partner' is 'b'"):
        RunIdentity.from_dict({**OLD_IDENTITY, "simulator": "a", "partner": "b"})


def test_a_key_keeps_its_written_form_and_digest_so_old_caches_are_reused(tmp_path):
    key = IDENTITY.key("function", "cfg0", "task-0", 0, "c0ffee")
    assert key.to_dict() == OLD_KEY and key.digest == OLD_DIGEST
    assert TrialKey.from_dict(OLD_KEY) == key
    line = {"key": OLD_KEY, "digest": OLD_DIGEST, "status": "scored", "reward": 1.0, "info": {}}
    (tmp_path / "trials.jsonl").write_text(json.dumps(line) + "\n")
    cache = TrialCache(tmp_path / "trials.jsonl")
    assert cache.is_done(key) and cache.records(IDENTITY)[0].key == key
    assert cache.records(RunIdentity("tiny-agent", "abc123", "other")) == []
    cache.append(TrialRecord(key=IDENTITY.key("function", "cfg0", "task-1", 0), status="scored", reward=0.0))
    written = json.loads((tmp_path / "trials.jsonl").read_text().splitlines()[1])["key"]
    assert {"agent_model", "agent_revision", "simulator"} <= set(written) and "partner" not in written


def test_results_json_identity_names_both_spellings():
    identity = episode_results({}, IDENTITY)["identity"]
    assert identity == {**OLD_IDENTITY, "model_under_test": "tiny-agent", "model_revision": "abc123"} | {
        "partner": "scripted-user",
        "harness_version": "1",
    }
    assert RunIdentity.from_dict(identity) == IDENTITY


class _Model:
    def __init__(self, name: str, revision: str) -> None:
        self.name, self.revision = name, revision


def test_a_suite_identity_puts_the_simulator_under_test_and_its_partners_by_role():
    identity = suite_identity("turing", "1", _Model("sim", "r1"), {"judge": _Model("j", "r2")})
    assert (identity.model_under_test, identity.model_revision) == ("sim", "r1")
    assert identity.partner == "judge=j@r2" and identity.harness_version == "turing-v1"
