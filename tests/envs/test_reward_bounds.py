"""Property: whatever the agent does, step rewards are in [0, 1] and an episode's sum never exceeds 1.

Actions mix the task's own hidden words (the most rewarding thing an agent could say) with noise,
so that partial credit, repeats and bundles are all exercised. The base class clips a sum above 1 and
flags it; the built-in gyms never need that under our reward rules (Intention ``share``, Persuade
``progress``), while UserRL's rules (the defaults, docs/decisions.md A51) may be clipped.
"""

from __future__ import annotations

import asyncio

from gym_fixtures import needs_userrl, tasks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimesis_pl.envs import Action, EnvironmentManager
from mimesis_pl.envs.text import words
from mimesis_pl.users.scripted import ScriptedUser

NOISE = [
    "yes",
    "no",
    "maybe",
    "1",
    "2",
    "3",
    "4",
    "cat",
    "money",
    "time",
    "story",
    "answer",
    "test",
    "kiwi",
    "disagree",
]


def hidden_words(task):
    text = " ".join(str(v) for v in task.hidden.values() if isinstance(v, str))
    return sorted(set(words(text)))[:200] or ["x"]


OUR_RULES = {"IntentionGym": {"reward_rule": "share"}, "PersuadeGym": {"reward_rule": "progress"}}


def run(task, actions, ours=True):
    async def go():
        gym_cls = EnvironmentManager().registry.get(task.env_name)
        options = OUR_RULES.get(task.env_name, {}) if ours else {}
        gym = gym_cls(user=ScriptedUser(), **options) if gym_cls.needs_user else gym_cls()
        await gym.reset(task, episode_id="p")
        results = []
        for action in actions:
            if gym.done:
                break
            if action.choice in gym.choices:
                results.append(await gym.step(action))
        return results

    return asyncio.run(go())


@needs_userrl
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rewards_stay_in_the_unit_interval(data):
    env_name = data.draw(st.sampled_from(["FunctionGym", "TelepathyGym", "TurtleGym", "IntentionGym", "PersuadeGym"]))
    pool = tasks(env_name)
    task = pool[data.draw(st.integers(0, len(pool) - 1))]
    vocabulary = hidden_words(task) + NOISE
    content = st.lists(st.sampled_from(vocabulary), min_size=1, max_size=25).map(" ".join)
    actions = data.draw(
        st.lists(st.builds(Action, st.sampled_from(["action", "answer", "search"]), content), max_size=16)
    )
    if env_name == "TurtleGym" and data.draw(st.booleans()):
        actions.append(Action("answer", task.hidden["bottom"]))  # also reach the top
    ours = data.draw(st.booleans())
    results = run(task, actions, ours=ours)
    rewards = [r.reward for r in results]
    assert all(0.0 <= r <= 1.0 for r in rewards)
    assert sum(rewards) <= 1.0 + 1e-9
    if ours or env_name not in OUR_RULES:
        assert not any("reward_clipped" in r.info for r in results)
