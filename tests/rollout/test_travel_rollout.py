"""A TravelGym episode through the training rollout: per-turn rewards past a sum of 1 reach the experience."""

from __future__ import annotations

import asyncio
import math

import pyarrow.parquet as pq
from rollout_fixtures import ScriptedEngine, say

from mimesis_pl.envs import EnvironmentManager
from mimesis_pl.envs.gyms.travel.scenarios import parse_best_ids
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.experience import build_experience
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.rollout.settings import AdvantageSettings
from mimesis_pl.users.scripted import ScriptedUser

from ..conftest import REPO


def test_travel_episode_rewards_reach_grpo_unclipped(tiny_tokenizer):
    row = pq.read_table(REPO / "assets/data/travel/train/TravelGym.parquet").to_pylist()[0]
    best = parse_best_ids(row["reward_model"]["ground_truth"], where="row 0")
    aspects = list(best)
    # training rewards: search 0.0, preference 0.8, best 1.0
    texts = [
        say("search", f"{aspects[0]} options"),
        say("action", "Which seat class, star rating, cuisine or car type do you want?"),
        *[say("answer", best[a]) for a in aspects],
    ]
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=8)
    loop = MultiTurnRollout(ScriptedEngine(tiny_tokenizer, texts), tiny_tokenizer, manager, SamplingParams(64))
    traj = asyncio.run(loop.run_episode(row, group_id="g", gen_uid="g-0"))
    assert traj.status == "finished"
    # row 0 is flight:3-177|apartment:3-202|restaurant:2-60; its generated flight preferences include the seat class
    assert traj.turn_rewards == [0.0, 0.8, 1.0, 1.0, 1.0]  # no episode-sum clip (docs/decisions.md A40)
    exp = build_experience([traj], AdvantageSettings(estimator="trajectory", score="sum"), pad_id=0)
    assert math.isclose(traj.reward, sum(traj.turn_rewards), rel_tol=1e-6)  # the "sum" score sees every reward
    assert exp.tensors["advantages"].shape[0] == 1
