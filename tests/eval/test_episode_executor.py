"""EpisodeExecutor: real episodes (the environment owns the trajectory), cache/resume, failures unscored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from eval_episode_fixtures import KillAfter, Killed, ScriptedTokenEngine, val_tasks

from mimesis_pl.envs import EnvironmentManager, GymRegistry, GymTask
from mimesis_pl.envs.base import Gym
from mimesis_pl.envs.gyms.function import FunctionGym
from mimesis_pl.envs.gyms.telepathy import TelepathyGym
from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.eval import RetryPolicy
from mimesis_pl.eval.episodes import EngineEpisodeRunner, EpisodeExecutor, GymMetrics, episode_outcome, read_transcripts
from mimesis_pl.eval.trials import RunIdentity, TrialCache, trial_matrix
from mimesis_pl.rollout.engines import HFEngine, SamplingParams
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.rollout.services import ScriptedHTTPUserSettings, SimulatorServices
from mimesis_pl.users.scripted import ScriptedUser

IDENTITY = RunIdentity("tiny-agent", "rev-a", "scripted-user")
TINY_AGENT = "assets/tiny-agent"
NO_WAIT = RetryPolicy(max_attempts=2, backoff_s=0)


def runner_for(engine, tokenizer, manager, max_new_tokens: int = 160) -> EngineEpisodeRunner:
    sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0)
    return EngineEpisodeRunner(MultiTurnRollout(engine, tokenizer, manager, sampling, max_length=8192))


def test_scripted_turns_through_real_gyms_users_and_shim_record_the_real_observations(tiny_tokenizer, tmp_path):
    services = SimulatorServices(ScriptedHTTPUserSettings()).start()  # scripted users over HTTP + real shim
    try:
        manager = EnvironmentManager(
            users=services.users(), shim_url=services.shim_url, max_turns=4, no_tool_call="continue"
        )
        engine = ScriptedTokenEngine(tiny_tokenizer)
        executor = EpisodeExecutor(
            runner_for(engine, tiny_tokenizer, manager),
            IDENTITY,
            TrialCache(tmp_path / "trials.jsonl"),
            n_trials=1,
            transcripts=tmp_path / "episodes.jsonl",
        )
        run = asyncio.run(executor.run(val_tasks("TelepathyGym", "FunctionGym")))
    finally:
        services.stop()
    assert len(run.report.ran) == 4 and all(r.status == "scored" for r in run.records)
    episodes = {key.task_id: record for key, _, record in read_transcripts(tmp_path / "episodes.jsonl")}
    prompts = [tiny_tokenizer.decode(p, skip_special_tokens=False) for p in engine.prompts]

    cheetah = episodes["Cheetah"]
    assert cheetah.status == "finished" and list(cheetah.turn_rewards) == [0.0, 0.0, 1.0]
    assert [s.action for s in cheetah.steps] == [
        {"choice": "action", "content": "Is it a fast animal?"},
        {"choice": "action", "content": "Does it have spots?"},
        {"choice": "answer", "content": "Cheetah"},
    ]
    for t, step in enumerate(cheetah.steps[:2]):
        # the observation is the simulated user's real (public) reply, served through the shim ...
        assert step.observation == cheetah.simulator[t]["reply"] and step.observation.startswith(("Yes", "No", "Maybe"))
        assert "<think>" not in step.observation  # the shim kept the simulator's reasoning to itself
        # ... and it is the agent's next input: the prompt of turn t+1 ends with it
        next_prompt = next(p for p in prompts if "an animal" in p and p.count("<|im_start|>assistant") == t + 2)
        assert next_prompt.endswith(f"<|im_start|>tool\n{step.observation}<|im_end|>\n<|im_start|>assistant\n")
    assert cheetah.steps[-1].observation and cheetah.steps[-1].done and all(s.source == "real" for s in cheetah.steps)
    assert [m["role"] for m in cheetah.messages[:2]] == ["system", "user"]

    sputnik = episodes["Sputnik 1"]  # a wrong guess: a real 0, scored
    assert sputnik.status == "max_turns" and sputnik.reward == 0.0 and len(sputnik.steps) == 4
    function = episodes["func-191"]
    assert [s.tool_error for s in function.steps] == [None, "missing", None, None]
    assert "Error: No tool call" in function.steps[1].observation and function.steps[1].action is None
    assert "f(" in function.steps[0].observation  # the test case the gym revealed for `search test`

    summaries = executor.summarize(run.tasks, ks=(1,))
    assert summaries["telepathy"].pass_at_k[1] == 0.5 and summaries["function"].avg_at_n == 0.0
    cached = {r.key.task_id: r for r in run.records}
    assert cached["Cheetah"].reward == 1.0 and cached["Cheetah"].info["status"] == "finished"
    # scoring is a pure function of the transcript: re-scoring gives the cached rewards
    assert {k: episode_outcome(e).reward for k, e in episodes.items()} == {k: r.reward for k, r in cached.items()}


def test_real_tiny_agent_episodes_record_real_observations(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TINY_AGENT)  # the tiny model warm-started by our agent SFT
    engine = HFEngine(AutoModelForCausalLM.from_pretrained(TINY_AGENT), tokenizer)
    services = SimulatorServices(ScriptedHTTPUserSettings()).start()
    try:
        manager = EnvironmentManager(users=services.users(), shim_url=services.shim_url, max_turns=2)
        executor = EpisodeExecutor(
            runner_for(engine, tokenizer, manager, max_new_tokens=80),
            IDENTITY,
            TrialCache(tmp_path / "trials.jsonl"),
            n_trials=1,
            transcripts=tmp_path / "episodes.jsonl",
        )
        tasks = val_tasks("FunctionGym", "TelepathyGym")
        run = asyncio.run(executor.run(tasks))
    finally:
        services.stop()
        engine.close()
    assert len(run.records) == 4 and all(r.status == "scored" for r in run.records)
    by_id = {task.key: task for task in tasks}
    transcripts = list(read_transcripts(tmp_path / "episodes.jsonl"))
    assert sorted(key.task_id for key, _, _ in transcripts) == sorted(by_id)
    executed = []
    for key, attempt, episode in transcripts:
        assert attempt == 1 and episode.messages[:2] == tuple(by_id[key.task_id].public_messages())
        # every observation but the last is the tool message the model read before its next turn
        assert [m["content"] for m in episode.messages if m["role"] == "tool"] == [
            s.observation for s in episode.steps[:-1]
        ]
        for step in episode.steps:
            assert step.agent_output and (step.observation is None) == (step.finish_reason == "length")
            if step.action is not None:
                executed.append((episode.env_name, step))
    # the model's own calls were executed and the gyms answered them for real
    assert executed and all(step.observation and not step.observation.startswith("Error") for _, step in executed)
    assert not manager.active_episode_ids


def test_killed_run_resumes_and_every_trial_runs_exactly_once(tiny_tokenizer, tmp_path):
    tasks = val_tasks()
    path = tmp_path / "trials.jsonl"

    def executor(kill_after):
        manager = EnvironmentManager(users=ScriptedUser(), max_turns=2)
        runner = KillAfter(runner_for(ScriptedTokenEngine(tiny_tokenizer), tiny_tokenizer, manager), kill_after)
        return EpisodeExecutor(
            runner,
            IDENTITY,
            TrialCache(path),
            n_trials=2,
            retry=NO_WAIT,
            max_concurrency=3,
            transcripts=tmp_path / "episodes.jsonl",
        ), runner

    first, killer = executor(7)
    with pytest.raises(Killed):
        asyncio.run(first.run(tasks))
    assert len(killer.started) == 7 and len(TrialCache(path)) == 7  # episodes in flight finished and were kept

    second, resumed = executor(None)
    run = asyncio.run(second.run(tasks))
    every = killer.started + resumed.started
    assert len(every) == len(set(every)) == 20  # every trial ran exactly once over both runs
    assert run.report.reused == 7 and len(run.report.ran) == 13 and len(run.records) == 20

    third, idle = executor(None)
    assert asyncio.run(third.run(tasks)).report.reused == 20 and idle.started == []
    assert sum(1 for _ in read_transcripts(tmp_path / "episodes.jsonl")) == 20


class ExplodingGym(Gym):
    """A gym whose backend fails on every step."""

    env_name = "ExplodingGym"
    needs_user = False

    async def _reset(self, task: GymTask) -> None:
        pass

    async def _step(self, action):
        raise RuntimeError("backend down")


def exploding_row() -> dict[str, Any]:
    return {
        "data_source": "interact_exploding",
        "prompt": [{"role": "system", "content": "Play."}, {"role": "user", "content": "Go."}],
        "reward_model": {"env_name": "ExplodingGym", "id": "boom-1"},
        "extra_info": {"tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": "ExplodingGym"}}}},
    }


class FlakyUsers:
    """A simulator that breaks (HTTP error) for the Cheetah task and hangs for the Sputnik one."""

    def for_episode(self, episode_id: str, base_url: str | None):
        return self

    async def reply(self, messages, *, episode_id: str):
        if "Cheetah" in messages[0]["content"]:
            raise UserSimulatorError("simulator answered HTTP 502")
        await asyncio.sleep(5)

    async def aclose(self) -> None:
        pass


def test_infrastructure_failures_are_unscored_not_zeros_and_rerun_later(tiny_tokenizer, tmp_path):
    registry = GymRegistry((FunctionGym, TelepathyGym, ExplodingGym))
    tasks = val_tasks("TelepathyGym", "FunctionGym") + [GymTask.from_row(exploding_row(), source="exploding")]
    path = tmp_path / "trials.jsonl"

    def executor(users):
        manager = EnvironmentManager(
            users=users, max_turns=3, step_timeout_s=0.2, reset_timeout_s=30.0, registry=registry
        )
        runner = KillAfter(runner_for(ScriptedTokenEngine(tiny_tokenizer), tiny_tokenizer, manager), None)
        return EpisodeExecutor(
            runner, IDENTITY, TrialCache(path), n_trials=1, retry=NO_WAIT, transcripts=tmp_path / "episodes.jsonl"
        ), runner

    broken, broken_runner = executor(FlakyUsers())
    run = asyncio.run(broken.run(tasks))
    by_task = {r.key.task_id: r for r in run.records}
    assert {t: (r.status, r.failure, r.attempts, r.reward) for t, r in by_task.items() if r.status == "unscored"} == {
        "Cheetah": ("unscored", "simulator", 2, None),
        "Sputnik 1": ("unscored", "timeout", 2, None),
        "boom-1": ("unscored", "environment", 2, None),
    }
    assert by_task["func-191"].status == "scored" and by_task["func-191"].reward == 0.0  # a real zero
    statuses = [(k.task_id, a, e.status) for k, a, e in read_transcripts(tmp_path / "episodes.jsonl") if e.failed]
    assert sorted(statuses) == [
        ("Cheetah", 1, "user_error"),
        ("Cheetah", 2, "user_error"),
        ("Sputnik 1", 1, "timeout"),
        ("Sputnik 1", 2, "timeout"),
        ("boom-1", 1, "env_error"),
        ("boom-1", 2, "env_error"),
    ]

    summaries = broken.summarize(run.tasks, ks=(1,))
    telepathy = summaries["telepathy"]
    assert (telepathy.scored_trials, telepathy.unscored_trials) == (0, 2)
    assert telepathy.unscored_by_kind == {"simulator": 1, "timeout": 1}
    assert telepathy.avg_at_n is None and telepathy.pass_at_k[1] is None and telepathy.success_rate is None
    assert summaries["exploding"].unscored_by_kind == {"environment": 1}
    assert summaries["function"].avg_at_n == 0.0 and summaries["function"].scored_trials == 2
    metrics = GymMetrics((1,))
    metrics.update(trial_matrix(run.records, "telepathy", 1))
    assert "pass@1" not in metrics.compute() and "avg@n" not in metrics.compute()  # not 0: undefined

    healed, healed_runner = executor(ScriptedUser())
    rerun = asyncio.run(healed.run(tasks[:-1]))
    assert sorted(p.split("-t")[0].split("-")[0] for p in healed_runner.started) == ["telepathy", "telepathy"]
    assert {r.key.task_id: r.reward for r in rerun.records} == {
        "Cheetah": 1.0,
        "Sputnik 1": 0.0,
        "func-191": 0.0,
        "func-324": 0.0,
    }


def test_configuration_changes_start_a_new_cache_line(tiny_tokenizer, tmp_path):
    def ref(max_turns=16, temperature=0.0, options=None):
        manager = EnvironmentManager(users=ScriptedUser(), max_turns=max_turns, gym_options=options)
        sampling = SamplingParams(max_new_tokens=64, temperature=temperature)
        runner = EngineEpisodeRunner(
            MultiTurnRollout(ScriptedTokenEngine(tiny_tokenizer), tiny_tokenizer, manager, sampling)
        )
        return EpisodeExecutor(runner, IDENTITY, TrialCache(tmp_path / "t.jsonl")).task_ref(val_tasks("TurtleGym")[0])

    base = ref()
    assert base.gym == "turtle" and base.task_id == "The Deadly Bet"
    variants = {
        ref(max_turns=8).gym_config_hash,
        ref(temperature=1.0).gym_config_hash,
        ref(options={"TurtleGym": {"success_threshold": 0.5}}).gym_config_hash,
    }
    assert ref().gym_config_hash == base.gym_config_hash and base.gym_config_hash not in variants and len(variants) == 3


def test_an_edited_task_gets_a_new_cache_key_a_moved_one_does_not(tiny_tokenizer, tmp_path):
    from dataclasses import replace

    manager = EnvironmentManager(users=ScriptedUser(), max_turns=16)
    sampling = SamplingParams(max_new_tokens=64, temperature=0.0)
    runner = EngineEpisodeRunner(
        MultiTurnRollout(ScriptedTokenEngine(tiny_tokenizer), tiny_tokenizer, manager, sampling)
    )
    executor = EpisodeExecutor(runner, IDENTITY, TrialCache(tmp_path / "t.jsonl"))
    task = val_tasks("TelepathyGym")[0]
    edited = replace(task, hidden={**task.hidden, "answer": "something else"})
    moved = replace(task, source="other.parquet:row 9", index=9)
    key = executor.task_ref(task).key(IDENTITY, 0)
    assert executor.task_ref(edited).task_id == executor.task_ref(task).task_id  # same id ...
    assert executor.task_ref(edited).key(IDENTITY, 0).digest != key.digest  # ... new content: never reused
    assert executor.task_ref(moved).key(IDENTITY, 0).digest == key.digest  # where it was read is not content
