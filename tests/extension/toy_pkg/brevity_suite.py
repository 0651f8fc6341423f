"""A researcher's own fidelity suite, outside mimesis_pl: how often a simulator's reply stays under a word budget.

model: {class_path: mimesis_pl.modules.simulator_eval.SimulatorEvalModule,
        init_args: {suite: {class_path: brevity_suite.BrevitySuite, init_args: {max_words: 5}}}}
data: {class_path: brevity_suite.BrevityData, init_args: {files: [prompts.jsonl]}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mimesis_pl.eval.simulator.base import FidelitySuite, ItemDataModule, SuiteContext, SuiteReport
from mimesis_pl.eval.simulator.models import build_chat_model
from mimesis_pl.failures import SimulatorFailure
from mimesis_pl.llm import ChatModelSettings, ScriptedChatSettings


def echo_user(messages, seed, temperature) -> str:
    """The offline stand-in: repeats the prompt's words."""
    return messages[-1]["content"]


class BrevityData(ItemDataModule):
    """One prompt per JSONL line: ``{"id": ..., "prompt": ...}``."""

    def __init__(self, files: list[str], limit: int | None = None, batch_size: int = 4) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)

    def load(self) -> list[Any]:
        return [json.loads(line) for f in self.files for line in Path(f).read_text().splitlines() if line.strip()]


class BrevitySuite(FidelitySuite):
    name = "brevity"
    version = "1"

    def __init__(self, simulator: ChatModelSettings | None = None, max_words: int = 5) -> None:
        self.settings = simulator or ScriptedChatSettings(model="echo-user", max_tokens=64)
        self.max_words = max_words
        self.scores: dict[str, float] = {}

    def start(self) -> None:
        self._models = {"simulator": build_chat_model(self.settings, "simulator", SimulatorFailure, echo_user)}

    async def run_batch(self, batch: list[Any], ctx: SuiteContext) -> None:
        for item in batch:
            messages = [{"role": "user", "content": item["prompt"]}]
            reply = await self._models["simulator"].complete(messages, temperature=0.0, max_tokens=64)
            self.scores[item["id"]] = float(len(reply.split()) <= self.max_words)
            ctx.ran += 1

    def report(self, ctx: SuiteContext) -> SuiteReport:
        share = sum(self.scores.values()) / len(self.scores)
        results = {"brief_share": share, "items": len(self.scores)}
        return SuiteReport(results, f"# Brevity\n\nbrief share: {share:.2f}\n", {"brief_share": share})

    def chart(self, report: SuiteReport, path: Path) -> Path | None:
        return None
