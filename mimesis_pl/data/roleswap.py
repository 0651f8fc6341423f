"""Stage 1 — role-swap mid-training SFT over a parquet mixture of human–AI conversations."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .chat_sft import BadSample, ChatSFTDataModule, Conversation
from .mixture import ParquetRows, mixture_index, parse_file_specs
from .processors import Fallback, ProcessorRouter
from .truncation import LengthLimits


class RoleSwapSFTDataModule(ChatSFTDataModule):
    """Rows ``{data_source, messages}`` (or ``extra_info.messages``) → processor → masks.

    Args:
        files: mixture specs ``path_or_glob.parquet[:ratio]`` (see :func:`parse_file_specs`).
        val_files: optional specs for validation (then ``val_fraction`` is not used).
        routing: ``data_source → processor`` entries merged over the reference table
            (processors: ``swap``, ``no_swap``, ``fold_swap``).
        routing_fallback: ``substring`` (the reference): a source with no exact entry takes the first table key
            it contains; ``exact``: exact entries only (docs/decisions.md S63).
        default_processor: processor for sources neither rule routes; ``None`` makes them a counted skip
            (or an error under ``on_bad_sample: raise``) that lists the known sources.
        strip_system: drop system messages (every processor honours it).
        fold_keep_turns: turns ``fold_swap`` keeps verbatim.
        max_samples: cap on the shuffled mixture (``None`` = all).
        limits: 16384 / 8192 / 24576, ``error``; unless ``limits.over_long`` says ``drop``, an over-long prompt
            keeps its last and an over-long response its first tokens, as the reference (S63), and ``error``
            then guards only ``max_length``.
        **kwargs: see :class:`ChatSFTDataModule`.
    """

    def __init__(
        self,
        files: list[str],
        val_files: list[str] | None = None,
        routing: dict[str, str] | None = None,
        default_processor: str | None = None,
        routing_fallback: Fallback = "substring",
        strip_system: bool = False,
        fold_keep_turns: int = 20,
        max_samples: int | None = None,
        limits: LengthLimits = LengthLimits(16384, 8192, 24576, "error"),
        **kwargs: Any,
    ) -> None:
        if limits.over_long is None:
            limits = dataclasses.replace(limits, over_long="cut")
        super().__init__(limits=limits, **kwargs)
        self.files = list(files)
        self.val_files = list(val_files) if val_files else None
        self.router = ProcessorRouter(
            routing, default_processor, strip_system, fold_keep_turns, fallback=routing_fallback
        )
        self.max_samples = max_samples

    def iter_conversations(self) -> Iterator[Conversation | BadSample]:
        yield from self._iter_mixture(
            self.files, split="train" if self.val_files else None, max_samples=self.max_samples
        )
        if self.val_files:
            yield from self._iter_mixture(self.val_files, split="val", max_samples=None)

    def _iter_mixture(self, specs: list[str], split: str | None, max_samples: int | None):
        parsed = parse_file_specs(specs)
        rows = ParquetRows([s.path for s in parsed])
        for f, spec in enumerate(parsed):
            missing = {"data_source"} - set(rows.schema_names(f))
            if missing:
                raise ValueError(f"{spec.path}: missing column(s) {sorted(missing)}; columns: {rows.schema_names(f)}")
            if not _may_hold_messages(rows.schema(f)):
                raise ValueError(
                    f"{spec.path}: no 'messages' column (nor an 'extra_info' struct with 'messages'); "
                    f"columns: {rows.schema_names(f)}"
                )
        index = mixture_index(rows.num_rows, [s.ratio for s in parsed], seed=self.seed, max_samples=max_samples)
        for f, i in index:
            yield self._conversation(rows.paths[f], i, rows.row(f, i), split)

    def _conversation(self, path: str, i: int, row: dict[str, Any], split: str | None) -> Conversation | BadSample:
        where = f"{path}:row{i}"
        source = row.get("data_source")
        if not isinstance(source, str) or not source:
            return BadSample(f"{where}: field 'data_source' must be a non-empty string, got {source!r}")
        messages = row.get("messages")
        if messages is None:
            messages = (
                (row.get("extra_info") or {}).get("messages") if isinstance(row.get("extra_info"), dict) else None
            )
        if not isinstance(messages, list) or not messages:
            return BadSample(
                f"{where}: no messages (field 'messages' or 'extra_info.messages' must be a non-empty list)"
            )
        try:
            processed = self.router(source, messages)
        except KeyError as err:
            return BadSample(f"{where}: {err.args[0]}", reason="unknown_data_source")
        if any(not isinstance(m, dict) for m in processed):
            return BadSample(f"{where}: field 'messages': every message must be an object")
        return Conversation(sample_id=where, messages=processed, split=split, source=source)


def _may_hold_messages(schema: pa.Schema) -> bool:
    """Whether rows of this schema can carry ``messages`` or ``extra_info.messages``."""
    if "messages" in schema.names:
        return True
    if "extra_info" not in schema.names:
        return False
    kind = schema.field("extra_info").type
    # A struct lists its fields; a map or JSON string can only be checked row by row.
    return kind.get_field_index("messages") >= 0 if pa.types.is_struct(kind) else True
