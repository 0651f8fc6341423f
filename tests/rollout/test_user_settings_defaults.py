"""A ``users:`` class_path gets its own class's defaults, not the fields of the default scripted user.

jsonargparse carries a default instance's same-named fields into a new ``class_path``; with
``ScriptedHTTPUserSettings()`` as the field default, a checkpoint user came out greedy (temperature 0.0), with 1024
tokens and the scripted user's cache name. The default is now built after parsing (``users: null``). (A command-line
``--…users`` over a config that names another users class still keeps the fields both classes share: jsonargparse.)
"""

from __future__ import annotations

import re

import pytest

from mimesis_pl.cli import MimesisCLI
from mimesis_pl.rollout import CheckpointUserSettings, ScriptedHTTPUserSettings
from mimesis_pl.rollout.settings import RolloutSettings

from ..conftest import REPO

CHECKPOINT = "{class_path: mimesis_pl.rollout.CheckpointUserSettings, init_args: {model_dir: FOLDER}}"


class ParseOnlyCLI(MimesisCLI):
    def instantiate_classes(self) -> None:
        pass


@pytest.mark.parametrize(
    ("config", "key"),
    [("configs/tiny/agent_grpo.yaml", "rollout.users"), ("configs/tiny/eval_agent.yaml", "users")],
)
def test_a_users_class_path_keeps_its_own_defaults(config, key, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    (tmp_path / "config.json").write_text("{}")
    checkpoint = CHECKPOINT.replace("FOLDER", str(tmp_path))
    text = re.sub(
        r"users: \{class_path: mimesis_pl.rollout.ScriptedHTTPUserSettings\}",
        f"users: {checkpoint}",
        (REPO / config).read_text(),
    )
    assert checkpoint in text
    (tmp_path / "job.yaml").write_text(text)
    args = ["--config", str(tmp_path / "job.yaml")]
    cli = ParseOnlyCLI(args=args, run=False)
    users = cli.config["model"]["init_args"]
    for part in key.split("."):
        users = users[part]
    own = CheckpointUserSettings(model_dir=str(tmp_path))
    fields = users["init_args"]
    assert (fields["temperature"], fields["max_tokens"], fields["model"]) == (own.temperature, own.max_tokens, None)


def test_the_default_users_are_the_scripted_user_behind_the_shim():
    assert RolloutSettings().users is None and RolloutSettings().user_settings == ScriptedHTTPUserSettings()
