"""The coach stage of a CSD step: coach selected turns and build the teacher rows.

Per trajectory: pick up to ``turns_per_episode`` turns (turns whose preceding user reply carried
private reasoning first), read the simulator's privileged entries (from the shim by episode, or the
in-process record), ask the coach for a short note per turn, drop notes that leak a hidden value of
the task, and build one teacher row per note from the student's *exact* token prefix (plus a
placebo row whose note comes from another group and another task). The rows come back as the step's
:class:`~mimesis_pl.rollout.step.TeacherBatch`; the placebo pool is checkpointed through the module.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..chat import ChatRenderer
from ..csd.notebook import NoteRecord
from ..csd.prompts import NOTE_FRAMINGS, NoteFraming, frame_note
from ..envs import GymTask
from ..rl.placebo import PlaceboPool
from ..rl.teacher import build_teacher_rows
from .local_models import LocalModelSettings, acquire_model_server
from .step import RLStep, TeacherBatch


class CoachSettings:
    """Base of the coach choices (``class_path`` in YAML)."""

    def build(self, max_chars: int, user_shim_url: str | None) -> tuple[Any, list[Any]]:
        """The coach, and the servers started for it (stopped by the stage's teardown)."""
        raise NotImplementedError


@dataclass
class ScriptedCoachSettings(CoachSettings):
    """Offline rules over the user's private reasoning (never the hidden values of the task).

    Args:
        name_open_point: an open-concern note names the point the user named in their public reply
            (task-specific notes; the note-reading agent's traces are made with it on).
        name_open_aspect: CueGym's rule: the note names the aspect the user's reasoning says is open
            ("ask about the material"), never a value and never "ask" on the last turn (docs/decisions.md A95).
    """

    name_open_point: bool = False
    name_open_aspect: bool = False

    def build(self, max_chars: int, user_shim_url: str | None) -> tuple[Any, list[Any]]:
        from ..csd import ScriptedCoach

        return (
            ScriptedCoach(
                max_chars=max_chars, name_open_point=self.name_open_point, name_open_aspect=self.name_open_aspect
            ),
            [],
        )


@dataclass
class OpenAICoachSettings(CoachSettings):
    """A served model writes the notes; the job puts its own shim in front of it, which must not be the
    user simulator's endpoint.

    Args:
        upstream_url: the served coach, e.g. ``http://127.0.0.1:8001/v1``.
        model: the served model's name.
        shim: start a privileged shim in front of ``upstream_url`` (its ``<think>`` stays private).
        api_key_env: environment variable holding the coach server's key.
        temperature: sampling temperature.
        max_tokens: completion cap per note.
        timeout_s: per request.
    """

    upstream_url: str
    model: str = "coach"
    shim: bool = True
    api_key_env: str | None = None
    temperature: float = 0.7
    max_tokens: int = 300
    timeout_s: float = 120.0

    def build(self, max_chars: int, user_shim_url: str | None) -> tuple[Any, list[Any]]:
        from ..csd import OpenAICoach

        url, threads = self.upstream_url, []
        if user_shim_url is not None:
            # The coach's *upstream* is what must not be the users' shim: the coach's own shim always has a
            # new port, so comparing with it would accept a coach pointed at the user shim (docs/decisions.md A64).
            from ..shim.guard import check_distinct_endpoints

            check_distinct_endpoints(user_shim_url, self.upstream_url)
        if self.shim:
            from ..shim.background import ServerThread
            from ..shim.service import PrivilegedShim

            thread = ServerThread(PrivilegedShim(url), name="mimesis-coach-shim")
            url = thread.start()
            threads.append(thread)
        coach = OpenAICoach(
            base_url=url,
            model=self.model,
            api_key_env=self.api_key_env,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            timeout_s=self.timeout_s,
            max_chars=max_chars,
        )
        return coach, threads


@dataclass
class CheckpointCoachSettings(CoachSettings):
    """A coach checkpoint served by the job itself on loopback (``mimesis-pl serve``'s server, in this process),
    behind its own shim. Naming the user simulator's folder (with the same serving fields) shares the users'
    server and weights; the coach still has its own shim, so its calls never enter the users' privileged channel.

    Args:
        model_dir: the coach's HF folder (e.g. the simulator's export, to coach with the simulator itself).
        model: the served name (``None``: the one the server derives from the folder).
        chat_template: a shipped template name or a ``.jinja`` path (``None``: the export's ``chat_template.jinja``).
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
        dtype: the served weights' dtype.
        max_batch_size: concurrent requests generated in one batch.
        temperature: sampling temperature.
        max_tokens: completion cap per note.
        timeout_s: per request.
    """

    model_dir: str = ""
    model: str | None = None
    chat_template: str | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_batch_size: int = 32
    temperature: float = 0.7
    max_tokens: int = 300
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if not self.model_dir:
            raise ValueError("coaching.coach (CheckpointCoachSettings) needs model_dir: the coach's HF folder")
        self.server_settings().check("coaching.coach")

    def server_settings(self) -> LocalModelSettings:
        return LocalModelSettings.of(self)

    def build(self, max_chars: int, user_shim_url: str | None) -> tuple[Any, list[Any]]:
        lease = acquire_model_server(self.server_settings())
        try:
            served = OpenAICoachSettings(
                upstream_url=lease.url,
                model=lease.model_name,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                timeout_s=self.timeout_s,
            )
            coach, threads = served.build(max_chars, user_shim_url)
        except BaseException:
            lease.stop()
            raise
        return coach, [*threads, lease]


@dataclass
class CoachingSettings:
    """Which coach, which turns, and how teacher rows are built.

    Args:
        coach: the coach (``class_path``): scripted rules (default) or a served model.
        style: ``prospective`` (what to consider before acting) or ``corrective`` (what the user's
            reaction says about the action taken).
        note_framing: ``hindsight`` (the reference's: the note is introduced as hindsight guidance about
            the user's needs) or ``bare`` (the note text alone; docs/decisions.md A61). Placebo notes get the same.
        turns_per_episode: notes per trajectory at most (the reference's 16 coaches every turn of its
            episodes; set it to the decision turns of a gym to coach each, e.g. 3 on CueGym).
        require_evidence: coach only turns whose preceding user reply carried private reasoning.
        max_note_chars: notes are cut at a sentence boundary to this length (or skipped).
        drop_leaked_notes: drop notes that contain a hidden value of the task (counted either way).
        placebo: build placebo rows (control variate for the content-free shift of any note; the reference's
            default, true). Where the content-free shift is itself the lesson, the placebo cancels it: a study arm
            (docs/decisions.md A98).
        placebo_pool_size: capacity of the pool placebo notes are drawn from.
        placebo_min_pool: no placebo is drawn while the pool holds fewer notes.
        width_headroom: teacher rows may exceed the trajectory's length by this many tokens.
        null_probe: insert no note at all (teacher rows equal the student's prefix: a check that
            teacher and student log-probs agree; CSD then has a zero gap).
        placebo_only: the control arm of a CSD study — the teacher sees, instead of each turn's own note,
            a placebo note drawn from other groups and tasks (turns with no placebo yet get no row).
        max_concurrency: coach requests in flight at once.
        seed: the placebo pool's draws.
    """

    coach: CoachSettings = field(default_factory=ScriptedCoachSettings)
    style: Literal["prospective", "corrective"] = "prospective"
    note_framing: NoteFraming = "hindsight"
    turns_per_episode: int = 16
    require_evidence: bool = True
    max_note_chars: int = 600
    drop_leaked_notes: bool = True
    placebo: bool = True
    placebo_pool_size: int = 256
    placebo_min_pool: int = 8
    width_headroom: int = 1024
    null_probe: bool = False
    placebo_only: bool = False
    max_concurrency: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        if self.style not in ("prospective", "corrective"):
            raise ValueError(f"coaching.style must be 'prospective' or 'corrective', got {self.style!r}")
        if self.note_framing not in NOTE_FRAMINGS:
            raise ValueError(f"coaching.note_framing must be one of {NOTE_FRAMINGS}, got {self.note_framing!r}")


class CoachStage:
    """Turns a step's experience into its :class:`TeacherBatch` (runs after the rollout stage).

    ``setup(tokenizer, user_shim_url)`` builds the coach (and its shim); ``teardown`` stops them.
    The placebo pool and the coach's running counters are the stage's checkpointed state.
    """

    def __init__(self, settings: CoachingSettings) -> None:
        self.settings = settings
        self.pool = PlaceboPool(settings.placebo_pool_size, settings.placebo_min_pool, seed=settings.seed)
        self.totals: Counter = Counter()
        self.coach = None
        self._threads: list[Any] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._renderer: ChatRenderer | None = None
        #: Where each step's notes are appended as JSON lines (set by the module: ``<run>/coach_notes.jsonl``).
        self.notes_path: Path | None = None
        # With rollout.max_staleness >= 1 the notes are written on the rollouts' loop: the coach closes there too.
        self.run_on: Any = None

    # -- lifecycle -------------------------------------------------------------------------------

    def setup(self, tokenizer: Any, user_shim_url: str | None) -> None:
        if self.coach is not None:
            return
        self.coach, self._threads = self.settings.coach.build(self.settings.max_note_chars, user_shim_url)
        self._loop = asyncio.new_event_loop()
        self._renderer = ChatRenderer(tokenizer)

    def teardown(self) -> None:
        if self._loop is not None:
            if self.coach is not None and hasattr(self.coach, "aclose"):
                (self.run_on or self._loop.run_until_complete)(self.coach.aclose())
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

    # -- per step --------------------------------------------------------------------------------

    def teacher(
        self, step: RLStep, batch: list[dict[str, Any]], privileged_source: Any, *, global_step: int = 0
    ) -> TeacherBatch:
        """Coach the step's trained trajectories (``privileged_source``: the user shim's URL or client)."""
        exp = step.experience
        chosen = [exp.trajectories[i] for i in exp.trained]
        notes, counts, records = self._loop.run_until_complete(self.write_notes(chosen, batch, privileged_source))
        return self.teacher_from_notes(chosen, notes, counts, records, global_step=global_step)

    async def write_notes(self, chosen: list[Any], batch: list[dict[str, Any]], privileged_source: Any):
        """The coach's ``(notes, counts, records)`` for the trained trajectories ``chosen`` of ``batch`` (any event
        loop: the rollouts' background one with ``rollout.max_staleness >= 1``); touches no checkpointed state."""
        from ..csd import coach_batch

        s = self.settings
        hidden = {}
        for row in batch:
            task = GymTask.from_row(row, source=row.get("_source", "<row>"))
            hidden[task.key] = task.hidden
        records: list[NoteRecord] = []
        notes, counts = await coach_batch(
            chosen,
            [hidden.get(t.task_key, {}) for t in chosen],
            privileged_source=privileged_source,
            coach=self.coach,
            k=s.turns_per_episode,
            style=s.style,
            require_evidence=s.require_evidence,
            drop_leaked=s.drop_leaked_notes,
            max_concurrency=s.max_concurrency,
            records=records,
        )
        return notes, counts, records

    def teacher_from_notes(
        self,
        chosen: list[Any],
        notes: dict,
        counts: Counter,
        records: list[NoteRecord] | None = None,
        *,
        global_step: int = 0,
    ) -> TeacherBatch:
        """Teacher rows, placebo draws and pool additions from the step's notes (the trainer's thread, in step
        order: the placebo pool is checkpointed state). With :attr:`notes_path` set, every selected turn's outcome
        is appended there as one JSON line (:func:`note_lines`): what the coach told the agent."""
        s = self.settings
        real, placebo, placebos = self._teacher_rows(chosen, notes)
        placebo_drawn = len(placebos)
        # Notes join the pool only after this batch drew its placebos: a draw never sees its own batch.
        for (i, _), note in notes.items():
            self.pool.add(note, chosen[i].group_id, chosen[i].task_key)
        self.totals.update(counts)
        if self.notes_path is not None and records is not None:
            write_note_lines(self.notes_path, note_lines(records, chosen, placebos, global_step))
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
            real=real, placebo=placebo if s.placebo else None, metrics=metrics, spans=[t.turn_spans for t in chosen]
        )

    def _teacher_rows(
        self, chosen: list[Any], notes: dict[tuple[int, int], str]
    ) -> tuple[list[Any], list[Any], dict[tuple[int, int], str]]:
        """Per trajectory its real teacher rows and its placebo rows; and the placebo drawn per (trajectory, turn)."""
        s = self.settings
        real, placebo = [], []
        placebos: dict[tuple[int, int], str] = {}
        for b, traj in enumerate(chosen):
            mine = {t: note for (i, t), note in notes.items() if i == b}
            if s.placebo_only:
                mine = {t: p for t, note in mine.items() if (p := self.pool.draw(note, traj.group_id, traj.task_key))}
            width = len(traj.input_ids) + s.width_headroom
            real.append(build_teacher_rows(traj.input_ids, traj.turn_spans, mine, self._note_ids, width, prompt_len=0))
            if s.placebo:
                drawn = {t: self.pool.draw(note, traj.group_id, traj.task_key) for t, note in mine.items()}
                drawn = {t: p for t, p in drawn.items() if p}
                placebos.update({(b, t): p for t, p in drawn.items()})
                placebo.append(
                    build_teacher_rows(traj.input_ids, traj.turn_spans, drawn, self._note_ids, width, prompt_len=0)
                )
        return real, placebo, placebos

    def _note_ids(self, note: str) -> list[int]:
        """Tokens of a note as one complete user message placed at a turn's header start."""
        if self.settings.null_probe:
            return []
        return note_turn_ids(self._renderer, note, self.settings.note_framing)


def note_turn_ids(renderer: ChatRenderer, note: str, framing: NoteFraming = "hindsight") -> list[int]:
    """Tokens of ``note`` (framed) as one complete user message, spliced in at a turn's header start."""
    content = frame_note(note, framing)
    return renderer.message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": content})


def note_lines(
    records: list[NoteRecord], trajectories: list[Any], placebos: dict[tuple[int, int], str], global_step: int
) -> list[dict[str, Any]]:
    """One JSON-ready line per coached turn: step, episode, group, task, turn, status, the note (``None`` when
    the coach gave none or it was dropped), ``dropped_as_leak``, ``evidenced`` (the user's reply before the turn
    carried private reasoning) and the placebo note the teacher's control row got (``None``: none drawn).
    The hidden values a dropped note named are not written (only their count)."""
    lines = []
    for r in records:
        traj = trajectories[r.trajectory]
        lines.append(
            {
                "step": global_step,
                "episode_id": traj.episode_id,
                "group_id": traj.group_id,
                "task": traj.task_key,
                "turn": r.turn,
                "status": r.status,
                "note": r.note,
                "dropped_as_leak": r.status == "leaked" and r.note is None,
                "leaked_values": len(r.leaks),
                "evidenced": r.evidenced,
                "placebo": placebos.get((r.trajectory, r.turn)),
            }
        )
    return lines


def write_note_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """Append ``lines`` to ``path`` as JSON lines (the folder is made when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
