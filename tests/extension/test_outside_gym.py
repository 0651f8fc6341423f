"""A gym defined outside ``mimesis_pl`` (tests/extension/toy_pkg), trained with ``mimesis-pl fit`` and evaluated with
``mimesis-pl test`` from YAML that only names it by import path: no file of the package is touched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TOY = Path(__file__).resolve().parent / "toy_pkg"
WORDS = ["amber", "birch", "cobalt", "dune", "ember", "fjord"]


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    import secret_gym

    pq.write_table(pa.Table.from_pylist(secret_gym.rows(WORDS)), tmp_path / "SecretGym.parquet")
    yield secret_gym
    sys.modules.pop("secret_gym", None)


def _config(path: Path, config: dict) -> str:
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_a_gym_from_outside_the_package_trains_and_evaluates_from_yaml_alone(toy, tmp_path):
    from mimesis_pl.cli import main

    files = [str(tmp_path / "SecretGym.parquet")]
    fit = yaml.safe_load((REPO / "configs" / "tiny" / "agent_grpo.yaml").read_text())
    rollout = fit["model"]["init_args"]["rollout"]
    rollout.update(n_samples=2, max_new_tokens=24)
    rollout["episode"] = {**rollout.get("episode", {}), "gyms": ["secret_gym:SPEC"]}
    rollout["episode"]["gym_options"] = {"SecretGym": {"win_reward": 1.0}}
    fit["model"]["init_args"]["validation"] = None
    fit["data"]["init_args"].update(files=files, val_files=None)
    fit["trainer"].update(max_steps=2, default_root_dir=str(tmp_path / "fit"))
    fit["trainer"]["logger"]["init_args"]["save_dir"] = str(tmp_path / "fit")
    main(["fit", "--config", _config(tmp_path / "fit.yaml", fit)])
    assert len(toy.RESETS) == 2 * 2 * 2  # 2 steps × 2 prompts × 2 samples, all on the toy gym
    (events,) = (tmp_path / "fit").rglob("events.out.tfevents.*")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events.parent))
    acc.Reload()
    assert len(acc.Scalars("rollout/episode_reward_mean")) == 2

    toy.RESETS.clear()
    test = yaml.safe_load((REPO / "configs" / "tiny" / "eval_agent.yaml").read_text())
    model = test["model"]["init_args"]
    model["episode"] = {**model["episode"], "gyms": ["secret_gym:SPEC"]}
    model.update(out_dir=str(tmp_path / "eval"), n_trials=1, ks=[1])
    test["data"]["init_args"].update(files=files, tasks_per_gym=3)
    test["trainer"]["logger"]["init_args"]["save_dir"] = str(tmp_path / "eval-tb")
    main(["test", "--config", _config(tmp_path / "test.yaml", test)])
    assert sorted(toy.RESETS) == ["secret-0", "secret-1", "secret-2"]
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["gyms"]["secret"]["tasks"] == 3 and results["gyms"]["secret"]["scored_trials"] == 3


def test_a_bad_gym_path_names_the_key():
    from mimesis_pl.rollout.settings import EpisodeSettings

    with pytest.raises(ValueError, match=r"episode.gyms: cannot import 'no_such_pkg:SPEC'"):
        EpisodeSettings(gyms=["no_such_pkg:SPEC"])
    with pytest.raises(ValueError, match=r"episode.gyms: 'json:dumps' is a function, not a GymSpec"):
        EpisodeSettings(gyms=["json:dumps"])


def test_the_scripted_user_answers_an_outside_gym_registered_after_its_import(toy):
    from mimesis_pl.rollout.settings import EpisodeSettings
    from mimesis_pl.users.scripted import ScriptedUser

    user = ScriptedUser()  # imported (and built) before the gym is registered: nothing snapshots the registry
    EpisodeSettings(gyms=["secret_gym:SPEC"], gym_options={"SecretGym": {"win_reward": 0.5}})
    persona = {"role": "system", "content": '<persona>{"gym": "SecretGym", "word": "amber"}</persona>'}
    reply = user.respond([persona, {"role": "user", "content": "What is your secret word?"}])
    assert reply.public == "The word is amber." and "amber" in reply.reasoning


def test_a_csd_estimator_from_outside_the_package_is_chosen_by_its_import_path(monkeypatch, tmp_path):
    import torch

    from mimesis_pl.cli import main
    from mimesis_pl.modules.settings import CSDSettings
    from mimesis_pl.rl.losses import csd_loss

    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    with pytest.raises(ValueError, match=r"csd.estimator: unknown CSD estimator 'nope'; registered: \['sdar'"):
        CSDSettings(estimator="nope")
    assert CSDSettings(estimator="my_estimator:squared_gap").estimator == "my_estimator:squared_gap"
    student = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    loss, _ = csd_loss(student, torch.tensor([[-0.5, -2.0]]), torch.ones(1, 2), estimator="my_estimator:squared_gap")
    assert loss.item() == pytest.approx(0.5 * 0.25 / 2)
    import my_estimator

    my_estimator.CALLS.clear()
    main(
        ["fit", "--config", str(REPO / "configs" / "tiny" / "agent_csd.yaml"), "--trainer.max_steps=2"]
        + ["--model.init_args.csd.estimator=my_estimator:squared_gap", f"--trainer.default_root_dir={tmp_path}"]
        + [f"--trainer.logger.init_args.save_dir={tmp_path}"]
    )
    assert my_estimator.CALLS  # the update's CSD term went through the outside estimator


def test_an_advantage_estimator_from_outside_the_package_is_chosen_by_its_import_path(monkeypatch, tmp_path):
    from mimesis_pl.cli import main
    from mimesis_pl.rollout.settings import AdvantageSettings

    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    with pytest.raises(ValueError, match=r"advantage.estimator: unknown advantage estimator 'gae'; registered"):
        AdvantageSettings(estimator="gae")
    import my_advantage

    my_advantage.CALLS.clear()
    main(
        ["fit", "--config", str(REPO / "configs" / "tiny" / "agent_grpo.yaml"), "--trainer.max_steps=1"]
        + ["--model.init_args.advantage.estimator=my_advantage:last_turn", "--model.init_args.validation=null"]
        + [f"--trainer.default_root_dir={tmp_path}", f"--trainer.logger.init_args.save_dir={tmp_path}"]
    )
    assert my_advantage.CALLS  # the step's advantages came from the outside estimator


def test_a_reimported_gym_module_registers_again_and_another_class_cannot_take_its_name(toy):
    import importlib

    from mimesis_pl.envs.registry import default_registry, register_gym

    register_gym(toy.SPEC)
    again = importlib.reload(toy)  # a notebook's autoreload: the same definition, a new class object
    register_gym(again.SPEC)
    assert default_registry().get("SecretGym") is again.SecretGym

    class SecretGym(again.SecretGym):  # another class under the taken name
        pass

    with pytest.raises(ValueError, match="gym name 'SecretGym' is already taken by secret_gym.SecretGym"):
        register_gym(SecretGym)
    with pytest.raises(ValueError, match="gym name 'CueGym' is already taken by mimesis_pl.envs.gyms.cue.CueGym"):
        register_gym(type("CueGym", (again.SecretGym,), {"env_name": "CueGym"}))


def test_a_simulator_rl_task_from_outside_the_package_trains_from_yaml_alone(monkeypatch, tmp_path):
    from mimesis_pl.cli import main

    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    import echo_task

    train, val = tmp_path / "echo.jsonl", tmp_path / "echo_val.jsonl"
    train.write_text("\n".join(json.dumps(r) for r in echo_task.rows(WORDS)) + "\n")
    val.write_text("\n".join(json.dumps(r) for r in echo_task.rows(WORDS[:2])) + "\n")
    main(
        ["fit", "--config", str(REPO / "configs" / "tiny" / "simulator_rl.yaml"), "--trainer.max_steps=1"]
        + ["--model.init_args.tasks=[echo_task:SPECS]", f"--data.init_args.files=[{train}]"]
        + [f"--data.init_args.val_files=[{val}]", "--data.init_args.batch_size=3"]
        + [f"--trainer.default_root_dir={tmp_path}", f"--trainer.logger.init_args.save_dir={tmp_path}"]
    )
    assert echo_task.BUILT == ["echo"]
    (events,) = tmp_path.rglob("events.out.tfevents.*")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events.parent))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "rollout/echo/reward" in tags and "val-core/echo/reward/mean@1" in tags  # trained and validated


def test_a_task_from_outside_the_package_is_a_soul_set_of_its_axis_from_yaml_alone(monkeypatch, tmp_path):
    from mimesis_pl.cli import main

    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    import echo_task

    rows = [{**row, "prompt": [{"role": "user", "content": "hi"}]} for row in echo_task.rows(WORDS[:2])]
    (tmp_path / "echo_val.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    suite = "--model.init_args.suite.init_args"
    main(
        ["test", "--config", str(REPO / "configs" / "tiny" / "eval_soul.yaml"), f"{suite}.tasks=[echo_task:SPECS]"]
        + [f"{suite}.seeds=[0]", f"{suite}.allow_unscored_sets=true", f"--data.init_args.files=[{tmp_path}]"]
        + [f"--model.init_args.out_dir={tmp_path / 'out'}", f"--trainer.logger.init_args.save_dir={tmp_path}"]
    )
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert echo_task.BUILT == ["echo"] and result["sets"] == ["echo"]
    assert result["rows_per_set"] == {"echo": 2}
    report = (tmp_path / "out" / "results.md").read_text()
    assert "| Echo | CONV | 2 |" in report


def test_a_task_data_source_cannot_be_taken_twice():
    from mimesis_pl.tasks.registry import TaskSpec, register_task

    with pytest.raises(ValueError, match="data_source 'hitom' is already taken"):
        register_task(TaskSpec("hitom", "my_pkg:hitom"))
