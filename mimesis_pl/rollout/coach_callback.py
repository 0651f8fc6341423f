"""``CoachCallback``: after the rollouts, coach selected turns and build the CSD teacher rows.

Per trajectory: pick up to ``turns_per_episode`` turns (turns whose preceding user reply carried
private reasoning first), read the simulator's privileged entries (from the shim by episode, or the
in-process record), ask the coach for a short note per turn, drop notes that leak a hidden value of
the task, and build one teacher row per note from the student's *exact* token prefix (plus a
placebo row whose note comes from another group and another task). The rows ride on the module's
``experience.teacher``; the placebo pool is checkpointed with the callback.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import lightning.pytorch as pl

from ..chat import ChatRenderer
from ..envs import GymTask
from ..rl.placebo import PlaceboPool
from ..rl.teacher import TeacherRows, build_teacher_rows

log = logging.getLogger(__name__)


@dataclass
class CoachSettings:
    """Which coach writes the notes.

    ``scripted``: offline rules over the user's private reasoning (never the hidden values).
    ``openai``: a served model at ``upstream_url``; the job puts its own shim in front of it
    (``shim: true``), which must not be the user simulator's endpoint.
    """

    kind: Literal["scripted", "openai"] = "scripted"
    upstream_url: str | None = None
    model: str = "coach"
    shim: bool = True
    api_key_env: str | None = None
    temperature: float = 0.7
    max_tokens: int = 300
    timeout_s: float = 120.0


@dataclass
class TeacherBatch:
    """Teacher rows of one experience, aligned with ``experience.trained`` (tensor row order)."""

    real: list[TeacherRows]
    placebo: list[TeacherRows] | None
    metrics: dict[str, float] = field(default_factory=dict)
    spans: list[list[Any]] = field(default_factory=list)  # each trajectory's TurnSpans (for prefix caching)


class CoachCallback(pl.Callback):
    """Coach turns and build teacher rows (put it after the ``RolloutCallback``).

    Args:
        coach: which coach.
        style: ``prospective`` (what to consider before acting) or ``corrective`` (what the user's
            reaction says about the action taken).
        turns_per_episode: notes per trajectory at most.
        require_evidence: coach only turns whose preceding user reply carried private reasoning.
        max_note_chars: notes are cut at a sentence boundary to this length (or skipped).
        drop_leaked_notes: drop notes that contain a hidden value of the task (counted either way).
        placebo: build placebo rows (control variate for the content-free shift of any note).
        placebo_pool_size / placebo_min_pool: the pool's capacity and the size below which no placebo is drawn.
        width_headroom: teacher rows may exceed the trajectory's length by this many tokens.
        null_probe: insert no note at all (teacher rows equal the student's prefix: a check that
            teacher and student log-probs agree; CSD then has a zero gap).
        placebo_only: the control arm of a CSD study — the teacher sees, instead of each turn's own note,
            a placebo note drawn from other groups and tasks (turns with no placebo yet get no row).
    """

    def __init__(
        self,
        coach: CoachSettings = CoachSettings(),
        style: Literal["prospective", "corrective"] = "prospective",
        turns_per_episode: int = 16,
        require_evidence: bool = True,
        max_note_chars: int = 600,
        drop_leaked_notes: bool = True,
        placebo: bool = True,
        placebo_pool_size: int = 256,
        placebo_min_pool: int = 8,
        width_headroom: int = 1024,
        null_probe: bool = False,
        placebo_only: bool = False,
        max_concurrency: int = 32,
        seed: int = 0,
    ) -> None:
        if style not in ("prospective", "corrective"):
            raise ValueError(f"style must be 'prospective' or 'corrective', got {style!r}")
        self.settings = coach
        self.style = style
        self.turns_per_episode = turns_per_episode
        self.require_evidence = require_evidence
        self.max_note_chars = max_note_chars
        self.drop_leaked_notes = drop_leaked_notes
        self.placebo = placebo
        self.pool = PlaceboPool(placebo_pool_size, placebo_min_pool, seed=seed)
        self.width_headroom = width_headroom
        self.null_probe = null_probe
        self.placebo_only = placebo_only
        self.max_concurrency = max_concurrency
        self.coach = None
        self.totals: Counter = Counter()
        self._threads: list = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._renderer: ChatRenderer | None = None
        self.coach_url: str | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit" or self.coach is not None:
            return
        from ..csd import OpenAICoach, ScriptedCoach

        s = self.settings
        if s.kind == "scripted":
            self.coach = ScriptedCoach(max_chars=self.max_note_chars)
        elif s.kind == "openai":
            if not s.upstream_url:
                raise ValueError("coach kind 'openai' needs coach.upstream_url")
            url = s.upstream_url
            if s.shim:
                from ..shim.background import ServerThread
                from ..shim.service import PrivilegedShim

                thread = ServerThread(PrivilegedShim(url), name="mimesis-coach-shim")
                url = thread.start()
                self._threads.append(thread)
            self.coach_url = url
            user_shim = _user_shim_url(trainer)
            if user_shim is not None:
                from ..shim.guard import check_distinct_endpoints

                check_distinct_endpoints(user_shim, url)
            self.coach = OpenAICoach(
                base_url=url, model=s.model, api_key_env=s.api_key_env, temperature=s.temperature,
                max_tokens=s.max_tokens, timeout_s=s.timeout_s, max_chars=self.max_note_chars,
            )
        else:
            raise ValueError(f"coach kind must be 'scripted' or 'openai', got {s.kind!r}")
        self._loop = asyncio.new_event_loop()
        self._renderer = ChatRenderer(pl_module.tokenizer)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self._loop is not None:
            if self.coach is not None and hasattr(self.coach, "aclose"):
                self._loop.run_until_complete(self.coach.aclose())
            self._loop.close()
            self._loop = None
        while self._threads:
            self._threads.pop().stop()
        self.coach = None

    def state_dict(self) -> dict[str, Any]:
        return {"placebo_pool": self.pool.state_dict(), "totals": dict(self.totals)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if "placebo_pool" in state_dict:
            self.pool.load_state_dict(state_dict["placebo_pool"])
        self.totals = Counter(state_dict.get("totals", {}))

    # -- per batch -------------------------------------------------------------------------------

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int) -> None:
        exp = getattr(pl_module, "experience", None)
        if exp is None:
            raise RuntimeError("CoachCallback found no experience: put it after the RolloutCallback in trainer.callbacks")
        exp.teacher = self.build_teacher(exp, batch, _privileged_source(trainer))

    def build_teacher(self, exp, batch: list[dict[str, Any]], shim_url: Any) -> TeacherBatch:
        from ..csd import coach_batch

        chosen = [exp.trajectories[i] for i in exp.trained]
        hidden = {}
        for row in batch:
            task = GymTask.from_row(row, source=row.get("_source", "<row>"))
            hidden[task.key] = task.hidden
        notes, counts = self._loop.run_until_complete(
            coach_batch(
                chosen,
                [hidden.get(t.task_key, {}) for t in chosen],
                privileged_source=shim_url,
                coach=self.coach,
                k=self.turns_per_episode,
                style=self.style,
                require_evidence=self.require_evidence,
                drop_leaked=self.drop_leaked_notes,
                max_concurrency=self.max_concurrency,
            )
        )
        real, placebo = [], []
        placebo_drawn = 0
        renderer = self._note_ids
        for b, traj in enumerate(chosen):
            mine = {t: note for (i, t), note in notes.items() if i == b}
            if self.placebo_only:
                mine = {t: p for t, note in mine.items() if (p := self.pool.draw(note, traj.group_id, traj.task_key))}
            width = len(traj.input_ids) + self.width_headroom
            real.append(build_teacher_rows(traj.input_ids, traj.turn_spans, mine, renderer, width, prompt_len=0))
            if self.placebo:
                drawn = {t: self.pool.draw(note, traj.group_id, traj.task_key) for t, note in mine.items()}
                drawn = {t: p for t, p in drawn.items() if p}
                placebo_drawn += len(drawn)
                placebo.append(build_teacher_rows(traj.input_ids, traj.turn_spans, drawn, renderer, width, prompt_len=0))
        # Notes join the pool only after this batch drew its placebos: a draw never sees its own batch.
        for (i, _), note in notes.items():
            self.pool.add(note, chosen[i].group_id, chosen[i].task_key)
        self.totals.update(counts)
        coached_tokens = sum(int(r.teacher_mask.sum()) for r in real)
        response_tokens = sum(t.response_length for t in chosen)
        metrics = {f"coach/{k}": float(v) for k, v in counts.items()}
        metrics.update(
            {
                "coach/notes": float(len(notes)),
                "coach/rows_skipped_width": float(sum(r.skipped for r in real)),
                "coach/placebo_rows": float(placebo_drawn),
                "coach/placebo_pool": float(len(self.pool)),
                "csd/coached_token_fraction": coached_tokens / max(1, response_tokens),
            }
        )
        return TeacherBatch(
            real=real, placebo=placebo if self.placebo else None, metrics=metrics, spans=[t.turn_spans for t in chosen]
        )

    def _note_ids(self, note: str) -> list[int]:
        """Tokens of a note as one complete user message placed at a turn's header start."""
        if self.null_probe:
            return []
        return self._renderer.message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": note})


def _user_shim_url(trainer: pl.Trainer) -> str | None:
    services = _user_services(trainer)
    return services.shim_url if services is not None else None


def _privileged_source(trainer: pl.Trainer):
    """Where the coach reads privileged entries: the user shim's URL, or a client that sends its token."""
    services = _user_services(trainer)
    if services is None or services.shim_url is None:
        return None
    token = services.shim_token
    if token is None:
        return services.shim_url
    from ..shim.client import ShimClient

    return ShimClient(services.shim_url, token=token)


def _user_services(trainer: pl.Trainer):
    from .callbacks import RolloutCallback

    for cb in trainer.callbacks:
        if isinstance(cb, RolloutCallback) and cb.services is not None:
            return cb.services
    return None
