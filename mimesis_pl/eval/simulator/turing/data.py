"""Turing's inputs: PRISM held-out rows in the turing-rl format (parquet or JSONL) and their DataModule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_pl.eval.simulator.base import ItemDataModule
from mimesis_pl.eval.simulator.rows import DataFormatError, at_least_one, claim, field_of, messages_of, rows_of
from mimesis_pl.eval.trials.keys import join_id


@dataclass(frozen=True)
class TuringRow:
    """One held-out target turn; ``key`` = ``user_id/post_id/target_idx``, each part escaped (E11)."""

    user_id: str
    post_id: str
    target_idx: int
    prompt: tuple[dict[str, str], ...]
    ground_truth: str
    user_history: str
    context: str

    @property
    def key(self) -> str:
        return join_id(self.user_id, self.post_id, self.target_idx)


def load_turing_rows(paths: Sequence[str]) -> list[TuringRow]:
    """turing-rl PRISM rows from parquet or JSONL: ``prompt``, ``reward_model.ground_truth``,
    ``extra_info{user_id, post_id, target_idx, user_history, context | thread_context}``.

    ``user_history`` may be empty (such rows are generated but skipped at scoring, as the reference).
    """
    rows: list[TuringRow] = []
    seen: dict[str, str] = {}
    for _, where, row in rows_of(paths):
        prompt = messages_of(field_of(row, "prompt", where, (list, tuple)), where, "prompt")
        reward_model = field_of(row, "reward_model", where, dict)
        truth = field_of(reward_model, "ground_truth", f"{where}: reward_model", str)
        extra = field_of(row, "extra_info", where, dict)
        at = f"{where}: extra_info"
        context = extra.get("context", extra.get("thread_context"))
        if not isinstance(context, str):
            raise DataFormatError(f"{at}: missing string field 'context' (or 'thread_context')")
        target = field_of(extra, "target_idx", at, int)
        history = extra.get("user_history", "")
        if not isinstance(history, str):
            raise DataFormatError(f"{at}: field 'user_history' must be str, got {type(history).__name__}")
        item = TuringRow(
            user_id=str(field_of(extra, "user_id", at, (str, int))),
            post_id=str(field_of(extra, "post_id", at, (str, int))),
            target_idx=target,
            prompt=prompt,
            ground_truth=truth,
            user_history=history,
            context=context,
        )
        claim(seen, item.key, where, "row")
        rows.append(item)
    return at_least_one(rows, "Turing rows", paths)


class TuringRowDataModule(ItemDataModule):
    """PRISM held-out rows (parquet or JSONL, turing-rl format).

    Args:
        files: files, folders or globs; ``limit``: first N rows; ``batch_size``: rows per ``test_step``.
    """

    def __init__(self, files: list[str], limit: int | None = None, batch_size: int = 64) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)

    def load(self) -> list[Any]:
        return load_turing_rows(self.files)
