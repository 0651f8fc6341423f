"""Fixtures for the served-model tests: the tiny export behind ``mimesis-pl serve`` on loopback, and a
scripted engine whose continuation is a fixed text (a tiny random model never writes a tool call)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from mimesis_pl.rollout.engines.base import GenerationResult, SamplingParams
from mimesis_pl.serve import BackgroundModelServer, ServedModel, ServeSettings, start_in_background

TINY = Path(__file__).resolve().parents[2] / "assets" / "tiny-qwen3"


class ScriptedEngine:
    """Answers every request with the ids of ``text`` (plus the stop id unless ``finish`` is ``"length"``)."""

    def __init__(self, tokenizer, text: str, finish: str = "stop") -> None:
        self.tokenizer, self.text, self.finish = tokenizer, text, finish
        self.prompts: list[list[int]] = []
        self.batches_run = 0

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        self.prompts.append(prompt_ids)
        self.batches_run += 1
        ids = self.tokenizer.encode(self.text, add_special_tokens=False)
        if self.finish == "stop":
            ids.append(params.stop_token_ids[0])
        return GenerationResult(ids, None, self.finish)

    def close(self) -> None:
        pass


def scripted_server(text: str, finish: str = "stop", **settings) -> tuple[BackgroundModelServer, ScriptedEngine]:
    serve = ServeSettings(model_dir=str(TINY), port=0, **settings)
    engine = ScriptedEngine(None, text, finish)
    served = ServedModel(serve, engine=engine)
    engine.tokenizer = served.tokenizer  # the export's own tokenizer encodes the script
    return start_in_background(serve, served=served), engine


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundModelServer]:
    with start_in_background(ServeSettings(model_dir=str(TINY), port=0, max_model_len=256)) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=60)
