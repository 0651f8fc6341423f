"""SFT DataModules over conversations: render with masks, apply length limits, bucket and resume.

:class:`ChatSFTDataModule` does the shared work; subclasses only say where conversations come from
(:meth:`ChatSFTDataModule.iter_conversations`). Bad rows are either raised as a named error or
skipped and counted (``on_bad_sample``); the counts are logged at set-up and kept in ``stats``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import lightning.pytorch as pl
from torch.utils.data import DataLoader

from ..chat import ChatRenderer, load_chat_template, load_tokenizer, pad_id_of, use_chat_template
from ..checks import check_choice
from .batching import ResumableBucketBatchSampler, ResumableSamplerMixin, check_batch_size, collate_padded
from .streaming import StreamingSFTBatches
from .truncation import LengthLimits, SampleTooLong, TruncationStats, apply_length_limits

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Conversation:
    """One conversation and where it came from (``sample_id`` names it in errors).

    ``split`` forces ``"train"`` or ``"val"``; ``None`` lets ``val_fraction`` decide by a hash of
    ``sample_id``. ``source`` (e.g. the data source) is counted in the set-up stats. ``tools``
    are the tool schemas offered in this conversation (rendered into its system block).
    """

    sample_id: str
    messages: list[dict[str, Any]]
    split: str | None = None
    source: str | None = None
    tools: list[dict[str, Any]] | None = None


class BadSample(ValueError):
    """A row that cannot become a training sample; the message names the file, row and field.

    ``reason`` is the stats key it is counted under (``skipped_{reason}``).
    """

    def __init__(self, message: str, reason: str = "bad_row") -> None:
        super().__init__(message)
        self.reason = reason


class ChatSFTDataModule(ResumableSamplerMixin, pl.LightningDataModule):
    """Shared SFT pipeline: conversations → :class:`ChatRenderer` → length limits → batches.

    Args:
        tokenizer_path: tokenizer folder; ``None`` takes the model's (bound by the CLI through
            :meth:`connect`).
        train_roles: roles trained on (loss mask 1 on their content and end-of-turn token).
        enable_thinking: passed to the chat template (``None`` leaves it undefined).
        chat_template: the template to render (and export) with: a name shipped in
            ``mimesis_pl/chat/templates/`` (``qwen3``, ``qwen3_5``, ``qwen2_5``, ``llama3``, ``chatml``) or a
            ``.jinja`` path; ``None`` keeps the tokenizer's own.
        limits: prompt / response / total token limits and the truncation policy.
        batch_size: sequences per batch; ``max_tokens_per_batch`` also caps padded tokens.
        val_fraction: share of conversations held out for validation, chosen by a hash of the
            sample id (stable across runs and data order).
        on_bad_sample: ``"skip"`` counts and logs bad rows; ``"raise"`` stops at the first one.
        drop_trailing_context: drop messages after the last trained one (they train nothing).
        seed: data order seed.
        streaming: read and render conversations lazily while training instead of all at set-up
            (memory flat in data-set size; an endless stream, so set ``trainer.max_steps``); see
            :mod:`~mimesis_pl.data.streaming` for the order, sharding, bucketing and resume.
        shuffle_window: with ``streaming``, conversations per shard rendered, length-bucketed and
            shuffled together (memory: one window per worker).
    """

    def __init__(
        self,
        tokenizer_path: str | None = None,
        train_roles: tuple[str, ...] = ("assistant",),
        enable_thinking: bool | None = None,
        chat_template: str | None = None,
        limits: LengthLimits = LengthLimits(),
        batch_size: int = 8,
        max_tokens_per_batch: int | None = None,
        val_fraction: float = 0.0,
        on_bad_sample: Literal["skip", "raise"] = "skip",
        drop_trailing_context: bool = True,
        seed: int = 0,
        num_workers: int = 0,
        streaming: bool = False,
        shuffle_window: int = 4096,
    ) -> None:
        super().__init__()
        if not 0.0 <= val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
        check_batch_size(batch_size, max_tokens_per_batch)
        check_choice("on_bad_sample", on_bad_sample, ("skip", "raise"))
        self.tokenizer_path = tokenizer_path
        self.train_roles = tuple(train_roles)
        self.enable_thinking = enable_thinking
        if chat_template is not None:
            load_chat_template(chat_template)  # a wrong name fails here, not as every row skipped
        self.chat_template = chat_template
        self.limits = limits
        self.batch_size = batch_size
        self.max_tokens_per_batch = max_tokens_per_batch
        self.val_fraction = val_fraction
        self.on_bad_sample = on_bad_sample
        self.drop_trailing_context = drop_trailing_context
        self.seed = seed
        self.num_workers = num_workers
        self.streaming = streaming
        self.shuffle_window = shuffle_window
        self.tokenizer = None
        self.stats: Counter = Counter()
        self.skip_examples: list[str] = []
        self.train_samples: list[dict[str, Any]] = []
        self.val_samples: list[dict[str, Any]] = []

    # -- what subclasses provide ----------------------------------------------------------------

    def iter_conversations(self) -> Iterator[Conversation | BadSample]:
        """Yield conversations, and a :class:`BadSample` (not raised) for each row that cannot be read."""
        raise NotImplementedError

    def template_kwargs(self) -> dict[str, Any]:
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}

    # -- wiring ----------------------------------------------------------------------------------

    def connect(self, tokenizer=None, model_path: str | None = None) -> None:
        """Bind a tokenizer late (the CLI passes the model's path when ``tokenizer_path`` is unset)."""
        if tokenizer is not None:
            self.tokenizer = use_chat_template(tokenizer, self.chat_template)
        elif self.tokenizer_path is None:
            self.tokenizer_path = model_path

    def _load_tokenizer(self):
        if self.tokenizer is None:
            if self.tokenizer_path is None:
                raise ValueError(f"{type(self).__name__}: set data.init_args.tokenizer_path or a model path")
            from ..model_paths import check_tokenizer_folder

            self.tokenizer = load_tokenizer(
                check_tokenizer_folder(self.tokenizer_path, "tokenizer_path"), self.chat_template
            )
        return self.tokenizer

    def renderer(self, tools: list[dict[str, Any]] | None = None) -> ChatRenderer:
        key = json.dumps(tools, sort_keys=True) if tools else ""
        cache = self.__dict__.setdefault("_renderers", {})
        if key not in cache:
            cache[key] = ChatRenderer(
                self._load_tokenizer(), train_roles=self.train_roles, tools=tools, **self.template_kwargs()
            )
        return cache[key]

    # -- set-up ----------------------------------------------------------------------------------

    def setup(self, stage: str | None = None) -> None:
        if self.streaming:
            # Nothing is read here: the train stream renders lazily, validation on first use.
            self.stats = Counter({"streaming": 1})
            return
        if self.train_samples or self.val_samples:
            return
        self._load_tokenizer()  # once, before the per-row error handling: a missing tokenizer is one error
        truncation = TruncationStats()
        stats: Counter = Counter()
        for conv in self.iter_conversations():
            sample = self._prepare(conv, stats, truncation)
            if sample is not None:
                (self.train_samples if self._is_train(conv) else self.val_samples).append(sample)
        stats.update(truncation.counts)
        stats["train_samples"] = len(self.train_samples)
        stats["val_samples"] = len(self.val_samples)
        self.stats = stats
        log.info("%s: %s", type(self).__name__, ", ".join(f"{k}={v}" for k, v in sorted(stats.items())))
        for example in self.skip_examples:
            log.warning("skipped: %s", example)
        if not self.train_samples:
            raise ValueError(
                f"{type(self).__name__}: no training samples after set-up ({dict(stats)}); {self._why_empty()}"
            )

    def _why_empty(self) -> str:
        if self.skip_examples:
            return f"first problems: {self.skip_examples[:3]}"
        if self.train_samples or self.val_samples:
            return "every sample went to validation (lower val_fraction)"
        return f"no rows were read: the data files {getattr(self, 'files', '')} hold no conversations (empty?)"

    def _prepare(self, conv: Conversation | BadSample, stats: Counter, truncation: TruncationStats | None = None):
        """One conversation → ``{"input_ids", "loss_mask", "sample_id"}``, or ``None`` (skip counted in ``stats``)."""
        truncation = truncation if truncation is not None else TruncationStats()
        if isinstance(conv, BadSample):  # a row the reader could not turn into messages
            self._skip(stats, conv.reason, conv)
            return None
        stats["conversations"] += 1
        if conv.source is not None:
            stats[f"source/{conv.source}"] += 1
        messages = conv.messages
        if self.drop_trailing_context:
            keep = len(messages)
            while (
                keep > 0
                and isinstance(messages[keep - 1], dict)
                and messages[keep - 1].get("role") not in self.train_roles
            ):
                keep -= 1
            if 0 < keep < len(messages):
                stats["trailing_context_dropped"] += 1
                messages = messages[:keep]
        try:
            rendered = self.renderer(conv.tools).render(messages, sample=conv.sample_id)
            ids, mask = apply_length_limits(
                rendered.input_ids, rendered.loss_mask, self.limits, truncation, sample=conv.sample_id
            )
        except SampleTooLong as err:
            self._skip(stats, "too_long", err)
            return None
        except ValueError as err:
            self._skip(stats, "render_error", err)
            return None
        if not any(mask):
            self._skip(stats, "no_trained_tokens", BadSample(f"sample {conv.sample_id}: no trained tokens left"))
            return None
        return {"input_ids": ids, "loss_mask": mask, "sample_id": conv.sample_id}

    def _is_train(self, conv: Conversation | BadSample) -> bool:
        if isinstance(conv, BadSample):
            return True  # counted (or raised) by the train stream, once
        return not (conv.split == "val" if conv.split is not None else self._is_val(conv.sample_id))

    def _skip(self, stats: Counter, reason: str, err: Exception) -> None:
        if self.on_bad_sample == "raise":
            raise err
        stats[f"skipped_{reason}"] += 1
        if len(self.skip_examples) < 20:
            self.skip_examples.append(f"{reason}: {err}")

    def _is_val(self, sample_id: str) -> bool:
        if self.val_fraction <= 0:
            return False
        digest = hashlib.sha256(f"{self.seed}:{sample_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.val_fraction

    def preview(self, n: int) -> list[dict[str, Any]]:
        """The first ``n`` rendered samples in source order (train, then validation)."""
        if self.streaming:
            out: list[dict[str, Any]] = []
            for conv in self.iter_conversations():
                sample = self._prepare(conv, Counter())
                if sample is not None:
                    out.append(sample)
                if len(out) >= n:
                    break
            return out
        return (self.train_samples + self.val_samples)[:n]

    # -- loaders ---------------------------------------------------------------------------------

    def _collate(self):
        return partial(collate_padded, pad_id=pad_id_of(self.tokenizer))

    def train_sampler(self) -> ResumableBucketBatchSampler:
        if self._train_sampler is None:
            rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
            self._install_sampler(
                ResumableBucketBatchSampler(
                    [len(s["input_ids"]) for s in self.train_samples],
                    batch_size=self.batch_size,
                    max_tokens=self.max_tokens_per_batch,
                    seed=self.seed,
                    rank=rank,
                    num_replicas=world,
                )
            )
        return self._train_sampler

    def train_stream(self) -> StreamingSFTBatches:
        if self._train_sampler is None:
            rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
            self._load_tokenizer()
            self._install_sampler(
                StreamingSFTBatches(
                    self.iter_conversations,
                    self._prepare,
                    self._is_train,
                    self._collate(),
                    batch_size=self.batch_size,
                    max_tokens=self.max_tokens_per_batch,
                    shuffle_window=self.shuffle_window,
                    seed=self.seed,
                    rank=rank,
                    world_size=world,
                )
            )
        return self._train_sampler

    def train_dataloader(self) -> DataLoader:
        if self.streaming:
            # batch_size=None: the stream yields collated batches; workers share nothing but the seed
            return DataLoader(self.train_stream(), batch_size=None, num_workers=self.num_workers)
        return DataLoader(
            self.train_samples,
            batch_sampler=self.train_sampler(),
            collate_fn=self._collate(),
            num_workers=self.num_workers,
        )

    def val_dataloader(self) -> DataLoader | list:
        if self.streaming and not self.val_samples:
            # Validation sets are small: render them (only them) on first use, every rank in full.
            self.val_samples = [
                sample
                for conv in self.iter_conversations()
                if not self._is_train(conv)
                if (sample := self._prepare(conv, self.stats)) is not None
            ]
            self.stats["val_samples"] = len(self.val_samples)
        if not self.val_samples:
            return []
        sampler = ResumableBucketBatchSampler(
            [len(s["input_ids"]) for s in self.val_samples],
            batch_size=self.batch_size,
            max_tokens=self.max_tokens_per_batch,
            shuffle=False,
        )
        return DataLoader(
            self.val_samples, batch_sampler=sampler, collate_fn=self._collate(), num_workers=self.num_workers
        )


class JsonlChatSFTDataModule(ChatSFTDataModule):
    """Conversations from JSONL files, one ``{"messages": [...], "tools": [...]?}`` object per line.

    Args:
        files: JSONL paths (globs allowed, expanded in sorted order).
        messages_field: the key that holds the message list.
        tools_field: the key that holds the (optional) tool schemas offered in the conversation.
        **kwargs: see :class:`ChatSFTDataModule`.
    """

    def __init__(
        self, files: list[str], messages_field: str = "messages", tools_field: str = "tools", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.files = list(files)
        self.messages_field = messages_field
        self.tools_field = tools_field

    def iter_conversations(self) -> Iterator[Conversation | BadSample]:
        for where, record in iter_jsonl_records(self.files):
            if isinstance(record, BadSample):
                yield record
                continue
            messages = record.get(self.messages_field)
            if not isinstance(messages, list):
                yield BadSample(f"{where}: field '{self.messages_field}' must be a list of messages")
                continue
            tools = record.get(self.tools_field)
            if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
                yield BadSample(f"{where}: field '{self.tools_field}' must be a list of tool schemas")
                continue
            yield Conversation(sample_id=where, messages=messages, tools=tools)


def iter_jsonl_records(patterns: list[str]) -> Iterator[tuple[str, dict[str, Any] | BadSample]]:
    """``(file:line, record)`` for every non-blank line; a line that is not a JSON object is a BadSample."""
    for path in expand_files(patterns):
        with open(path, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{line_no}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    yield where, BadSample(f"{where}: not valid JSON ({err.msg} at column {err.colno})")
                    continue
                if not isinstance(record, dict):
                    yield where, BadSample(f"{where}: expected a JSON object per line, got {type(record).__name__}")
                    continue
                yield where, record


def expand_files(patterns: list[str]) -> list[Path]:
    """Expand globs in sorted order; a pattern that matches nothing is an error naming it."""
    out: list[Path] = []
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            matches = (
                sorted(Path().glob(pattern))
                if not Path(pattern).is_absolute()
                else sorted(Path("/").glob(pattern.lstrip("/")))
            )
        else:
            matches = [Path(pattern)] if Path(pattern).exists() else []
        if not matches:
            raise FileNotFoundError(f"no file matches {pattern!r}")
        out.extend(matches)
    return out
