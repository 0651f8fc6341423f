"""Running one reference-shaped single-turn row through its task with a scripted reply."""

from __future__ import annotations

import asyncio

from task_fixtures import make_context

from mimesis_pl.tasks import get_task

#: A well-formed thinking reply (the chat template pre-fills the opener) whose answer is ``{}``.
THINKING = "\nI weigh each option against what I was told\n</think>\n\n<answer>{}</answer>"


def row(data_source: str, index: int = 0, **info) -> dict:
    """A row as the reference's preprocessing writes it, tagged with the file and row it came from."""
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": "unused"}],
        "extra_info": {"index": index, **info},
        "_source": f"{data_source}_val.jsonl:row{index + 1}",
    }


def run(tokenizer, data_source_row: dict, reply: str, *, is_train: bool = False):
    """``(TaskResult, the chat messages the policy saw)``; a bad row raises :class:`RowError`."""
    ctx = make_context(tokenizer, lambda prompt, k: reply, is_train=is_train, max_new_tokens=64)
    task = get_task(data_source_row["data_source"])
    result = asyncio.run(task.run(data_source_row, ctx, group_id="g", gen_uid="g-0"))
    return result, result.transcript


def answer(tokenizer, data_source_row: dict, letter: str, **kw) -> float:
    """The eval score of a well-formed thinking reply answering ``letter``."""
    return run(tokenizer, data_source_row, THINKING.format(letter), **kw)[0].score
