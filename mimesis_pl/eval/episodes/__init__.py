"""Episodes: the agent plays gym tasks end to end, the environment owning the trajectory.

Typical use::

    manager = EnvironmentManager(users=services.users(), shim_url=services.shim_url, max_turns=16)
    runner = EngineEpisodeRunner(MultiTurnRollout(engine, tokenizer, manager, SamplingParams(2048, 0.0)))
    executor = EpisodeExecutor(runner, RunIdentity(model, revision, simulator), TrialCache(path), n_trials=4)
    run = await executor.run(tasks)
    summaries = executor.summarize(run.tasks, ks=(1, 2, 4))

Episode results are reported apart from replay results and never averaged with them.
"""

from mimesis_pl.eval.episodes.executor import EpisodeExecutor, EpisodeRun, gym_label
from mimesis_pl.eval.episodes.metrics import GymMetrics
from mimesis_pl.eval.episodes.openai_runner import OpenAIChatEpisodeRunner, turn_text
from mimesis_pl.eval.episodes.records import (
    FAILURE_FOR_STATUS,
    EpisodeRecord,
    EpisodeStep,
    EpisodeTimeout,
    append_transcript,
    episode_outcome,
    read_transcripts,
)
from mimesis_pl.eval.episodes.runners import EngineEpisodeRunner, EpisodeRunner, step_record

__all__ = [
    "EngineEpisodeRunner",
    "EpisodeExecutor",
    "EpisodeRecord",
    "EpisodeRun",
    "EpisodeRunner",
    "EpisodeStep",
    "EpisodeTimeout",
    "FAILURE_FOR_STATUS",
    "GymMetrics",
    "OpenAIChatEpisodeRunner",
    "append_transcript",
    "episode_outcome",
    "gym_label",
    "read_transcripts",
    "step_record",
    "turn_text",
]
