"""One registry of gym specs serves the scripted user, the expert recorder, prepare-gyms and the UserRL adapter."""

from __future__ import annotations

import importlib.util
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimesis_pl.data.expert_traces import make_expert
from mimesis_pl.data.gym_prep import compact_prompt_row, prepare_gym_prompts
from mimesis_pl.envs import Action, Expert, GymRegistry, GymSpec, GymTask, UserSimulatorError, default_registry
from mimesis_pl.envs.expert import ExpertMove
from mimesis_pl.envs.gyms.telepathy import TelepathyGym
from mimesis_pl.envs.userrl_adapter import UserRLGym, userrl_env_factory
from mimesis_pl.users.scripted import ScriptedUser, user_rules

from ..conftest import ASSETS, REPO
from ..test_layout import imported_modules
from .gym_fixtures import make_row

# One shipped task file per built-in gym.
TASK_FILES = {
    "FunctionGym": "data/gyms/train/FunctionGym.parquet",
    "TelepathyGym": "data/gyms/train/TelepathyGym.parquet",
    "TurtleGym": "data/gyms/train/TurtleGym.parquet",
    "IntentionGym": "data/gyms/train/IntentionGym.parquet",
    "PersuadeGym": "data/gyms/train/PersuadeGym.parquet",
    "TravelGym": "data/travel/train/TravelGym.parquet",
    "SearchGym": "data/gyms/offline/SearchGym.parquet",
    "TauGym": "data/gyms/offline/TauGym.parquet",
    "CueGym": "data/cuegym/train/CueGym.parquet",
}
WITH_EXPERT = ["CueGym", "FunctionGym", "IntentionGym", "PersuadeGym", "TelepathyGym", "TravelGym", "TurtleGym"]


def first_row(name: str) -> dict:
    return pq.read_table(ASSETS / TASK_FILES[name]).to_pylist()[0]


def test_the_registry_holds_one_spec_per_builtin_gym():
    registry = default_registry()
    assert registry.names() == sorted(TASK_FILES)
    assert [s.name for s in registry.specs()] == registry.names()
    assert all(registry.get(s.name) is s.gym for s in registry.specs())
    # a gym that talks to a user declares the scripted user's rule; one that does not, none
    assert {s.name for s in registry.specs() if s.user_rule} == {s.name for s in registry.specs() if s.gym.needs_user}
    assert sorted(s.name for s in registry.specs() if s.expert) == WITH_EXPERT
    assert sorted(registry.compact_prompts()) == ["IntentionGym", "PersuadeGym"]


@pytest.mark.parametrize("name", sorted(TASK_FILES))
def test_every_gym_is_served_by_the_user_the_recorder_prepare_gyms_and_the_adapter(name, tmp_path):
    spec = default_registry().spec(name)
    task = GymTask.from_row(first_row(name), source=name)
    # the scripted user answers the gym's personas with the gym's own rule
    assert user_rules().get(name) is spec.user_rule
    # the expert recorder plays the gym with the expert its spec builds (or says which gyms have one)
    if spec.expert is None:
        with pytest.raises(
            ValueError, match=rf"no scripted expert for gym '{name}'; gyms with one: \['CueGym', 'FunctionGym'"
        ):
            make_expert(task, [task])
    else:
        expert = make_expert(task, [task])
        assert isinstance(expert, Expert) and isinstance(expert.act(task.public_messages(), []), ExpertMove)
    # prepare-gyms splits the gym's rows, writing its compact system prompt when it declares one
    compact = spec.compact_prompt is not None
    summary = prepare_gym_prompts([str(ASSETS / TASK_FILES[name])], tmp_path, compact_prompts=compact)
    assert summary["skipped"] == {} and set(summary["gyms"]) == {name}
    written = json.loads((tmp_path / "prepare-gyms.json").read_text())["files"]
    rows = [r for f in written for r in pq.read_table(tmp_path / f).to_pylist()]
    assert rows and all(f.endswith(f"/{name}.parquet") for f in written)
    if compact:
        assert {r["prompt"][0]["content"] for r in rows} == {spec.compact_prompt}
    # the adapter runs the UserRL package the gym names (CueGym is ours: no UserRL package, the adapter says so)
    if spec.userrl is None:
        with pytest.raises(ValueError, match=rf"gym '{name}': no UserRL package known for the adapter"):
            default_registry().resolve(name, {"userrl": {"model_name": "m"}})
        return
    cls, options = default_registry().resolve(name, {"userrl": {"model_name": "m"}})
    assert issubclass(cls, UserRLGym) and cls.env_name == name and cls.package == spec.userrl
    assert options == {"config": {"model_name": "m"}} and cls.data_sources == spec.gym.data_sources
    if importlib.util.find_spec(spec.userrl.module) is None:
        with pytest.raises(ImportError, match=rf"{name} adapter needs the UserRL package '{spec.userrl.module}'"):
            userrl_env_factory(name)(task, {})


def test_an_unknown_gym_is_an_error_naming_the_known_ones(tmp_path):
    registry = default_registry()
    with pytest.raises(ValueError, match=r"unknown gym 'ChessGym'; known: \['CueGym', 'FunctionGym', 'IntentionGym'"):
        registry.spec("ChessGym")
    row = make_row("ChessGym", "Your move.", reward_model={"id": "c1"}, create_kwargs={})
    with pytest.raises(ValueError, match=r"unknown gym 'ChessGym'; known: \['CueGym', 'FunctionGym'"):
        make_expert(GymTask.from_row(row), [])
    persona = '<persona>{"gym": "ChessGym"}</persona>'
    with pytest.raises(UserSimulatorError, match=r"no rules for gym 'ChessGym'; known: \['CueGym', 'IntentionGym'"):
        ScriptedUser().respond([{"role": "system", "content": persona}, {"role": "user", "content": "e4"}])
    with pytest.raises(ValueError, match=r"no compact system prompt for gym 'ChessGym'; known: \['IntentionGym'"):
        compact_prompt_row(row, "ChessGym")
    with pytest.raises(ValueError, match=r"no UserRL package known for 'ChessGym'; known: \['FunctionGym'"):
        userrl_env_factory("ChessGym")
    path = tmp_path / "chess.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    (tmp_path / "out").mkdir()  # with no gym file to write, prepare-gyms does not create --out itself
    assert prepare_gym_prompts([str(path)], tmp_path / "out")["skipped"] == {"unsupported/ChessGym": 1}


class OpeningExpert(Expert):
    def act(self, prompt, history):
        return ExpertMove(Action("answer", "e4"), "I open with the king's pawn.")


def test_a_new_gym_is_one_spec_in_a_registry():
    class ChessGym(TelepathyGym):
        env_name = "ChessGym"
        data_sources = ("interact_chess",)

    spec = GymSpec(gym=ChessGym, expert=lambda task, same_gym: OpeningExpert())
    registry = GymRegistry((spec,))
    task = GymTask.from_row(make_row("ChessGym", "Your move.", reward_model={"id": "c1"}, create_kwargs={}))
    assert registry.spec("interact_chess") is spec and registry.get("ChessGym") is ChessGym
    assert isinstance(make_expert(task, [task], registry), OpeningExpert)
    # registering the bare class again keeps what its spec declared; another class under the name is refused
    registry.register(ChessGym)
    assert registry.spec("ChessGym") is spec
    with pytest.raises(ValueError, match="already registered"):
        registry.register(type("ChessGym2", (TelepathyGym,), {"env_name": "ChessGym"}))


def test_the_expert_module_imports_neither_the_manager_nor_the_registry():
    source = (REPO / "mimesis_pl/envs/expert.py").read_text()
    names = {name for _, name in imported_modules(source, "mimesis_pl.envs")}
    assert not names & {"mimesis_pl.envs.manager", "mimesis_pl.envs.registry", "mimesis_pl.envs.catalog"}
    with pytest.raises(ImportError, match="import it from mimesis_pl.envs.expert_runner"):
        from mimesis_pl.envs.expert import run_expert_episode  # noqa: F401
    from mimesis_pl.envs import run_expert_episode as exported
    from mimesis_pl.envs.expert_runner import run_expert_episode

    assert exported is run_expert_episode
