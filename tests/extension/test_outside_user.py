"""A user simulator defined outside ``mimesis_pl`` (tests/extension/toy_pkg/my_user.py), chosen for ``mimesis-pl test``
by ``users: {class_path: my_user.MyUserSettings}`` alone: no file of the package is touched (issue #38)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TOY = Path(__file__).resolve().parent / "toy_pkg"


@pytest.fixture
def my_user(monkeypatch):
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    import my_user

    my_user.EPISODES.clear()
    my_user.REPLIES.clear()
    yield my_user
    sys.modules.pop("my_user", None)


def test_a_user_simulator_from_outside_the_package_answers_an_evaluation_from_yaml_alone(my_user, tmp_path):
    from mimesis_pl.cli import main

    test = yaml.safe_load((REPO / "configs" / "tiny" / "eval_agent.yaml").read_text())
    model = test["model"]["init_args"]
    # `model` given: jsonargparse carries a same-named field over from the default users (scripted_http's)
    model["users"] = {"class_path": "my_user.MyUserSettings", "init_args": {"word": "Kumquat", "model": "echo-user"}}
    model.update(out_dir=str(tmp_path / "eval"), n_trials=1, ks=[1])
    files = [str(REPO / "assets" / "data" / "gyms" / "val" / "TelepathyGym.parquet")]
    test["data"]["init_args"].update(files=files, tasks_per_gym=1)
    test["trainer"]["logger"]["init_args"]["save_dir"] = str(tmp_path / "tb")
    config = tmp_path / "test.yaml"
    config.write_text(yaml.safe_dump(test))
    main(["test", "--config", str(config)])

    assert len(my_user.EPISODES) == 1  # the one trial's user came from the outside provider
    assert my_user.REPLIES and all(r.startswith("Kumquat: I heard") for r in my_user.REPLIES)
    transcripts = (tmp_path / "eval" / "episodes.jsonl").read_text()
    assert all(reply in transcripts for reply in my_user.REPLIES)  # the agent was shown the outside user's replies
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["identity"]["simulator"] == "echo:echo-user"  # its kind and model name the cached trials
    assert results["config"]["users"] == {"kind": "echo", "word": "Kumquat", "model": "echo-user"}


def test_the_services_start_what_an_outside_settings_class_builds_and_nothing_else(my_user):
    from mimesis_pl.rollout.services import SimulatorServices

    services = SimulatorServices(my_user.MyUserSettings(word="Fig")).start()
    try:
        assert services.shim_url is None and services.upstream_url is None and services.shim_token is None
        assert services.describe() == "the in-process echo user (Fig)"
        assert services.users().for_episode("ep1", None).word == "Fig" and my_user.EPISODES == ["ep1"]
    finally:
        services.stop()


def test_a_user_settings_class_without_a_usable_build_is_refused_by_name():
    from mimesis_pl.rollout.services import SimulatorServices, UserSimSettings

    @dataclass
    class NoBuild(UserSimSettings):
        model: str = "none"

    @dataclass
    class WrongBuild(UserSimSettings):
        def build(self):
            return object()

    with pytest.raises(NotImplementedError, match="NoBuild does not implement build"):
        SimulatorServices(NoBuild()).start()
    with pytest.raises(TypeError, match="WrongBuild.build\\(\\) returned object, not BuiltUsers"):
        SimulatorServices(WrongBuild()).start()
    with pytest.raises(RuntimeError, match="call start\\(\\) first"):
        SimulatorServices(NoBuild()).users()
