"""A researcher's own rollout engine choice, outside mimesis_pl: HF generation that records each build.

rollout: {engine: {class_path: my_engine.CountingHFEngineSettings}}
"""

from __future__ import annotations

from dataclasses import dataclass

from mimesis_pl.rollout.engines import EngineTarget, HFEngineSettings, RolloutEngine

#: One entry per engine built by this process (a test reads it).
BUILT: list[str] = []


@dataclass
class CountingHFEngineSettings(HFEngineSettings):
    def build(self, target: EngineTarget) -> RolloutEngine:
        BUILT.append(target.model_path)
        return super().build(target)
