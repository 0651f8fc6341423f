"""Scripted expert agents, one per built-in gym, and a runner that records their traces.

An expert sees what an agent sees — the public prompt and the (action, observation) history — and
returns an :class:`ExpertMove`: a natural :class:`Action` plus a short thought for the ``<think>``
block. Experts recompute everything from the history on every call (no hidden state), so a trace can
be resumed anywhere. What each expert knows beyond the conversation is stated on its class:

- :class:`FunctionExpert`: nothing; it solves by probing (:mod:`mimesis_pl.envs.function_solver`).
- :class:`TelepathyExpert` / :class:`TurtleExpert` (in :mod:`mimesis_pl.envs.guess_experts`): world
  knowledge as a list of entity / story cards, and the question strategy that the scripted user
  answers; they narrow the cards down by asking, then answer.
- :class:`IntentionExpert`: which aspects of the request need clarifying (a domain expert's
  knowledge: the detail descriptions and their usual options), never the user's preferences.
- :class:`PersuadeExpert`: nothing; it answers the points the user says are still open.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mimesis_pl.envs import function_solver as fs
from mimesis_pl.envs import intention
from mimesis_pl.envs.base import Action, require
from mimesis_pl.envs.expert_base import Expert, ExpertMove, Turn, opening_text
from mimesis_pl.envs.function import format_number
from mimesis_pl.envs.guess_experts import TelepathyExpert, TurtleExpert
from mimesis_pl.envs.manager import EnvironmentManager, EpisodeSummary, PrivilegedTurn
from mimesis_pl.envs.tasks import GymTask

# ---------------------------------------------------------------------------------------- Function
_TEST_CASE = re.compile(r"The test case is f\(([-\d, ]+)\)")
_PROBE = re.compile(r"^f\(([-\d, ]+)\) (?:= (\S+)|is undefined)")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(","))


class FunctionExpert(Expert):
    """Gets the test case, probes the menu points (one input varied at a time), answers the consensus."""

    max_candidates_to_evaluate = 3000

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        test_case: tuple[int, ...] | None = None
        observed: dict[tuple[int, ...], float | None] = {}
        tried: set[float] = set()
        for action, observation in history:
            if (m := _TEST_CASE.search(observation)) is not None:
                test_case = _ints(m.group(1))
            elif (m := _PROBE.match(observation)) is not None:
                observed[_ints(m.group(1))] = float(m.group(2).rstrip(".")) if m.group(2) else None
            elif action.choice == "answer" and observation.startswith("Incorrect"):
                tried.add(float(action.content))
        if test_case is None:
            return ExpertMove(
                Action("search", "test"), "First I need the test case the hidden function must be applied to."
            )
        menu = [k for k, p in enumerate(fs.PROBE_MENU) if p != test_case]
        unprobed = [k for k in menu if fs.PROBE_MENU[k] not in observed]
        for k in unprobed:
            if k < fs.BASE_PROBES:
                return self._probe(k, _BASE_PROBE_REASONS[k])
        space = fs.hypothesis_space()
        rows = fs.consistent_rows(space, {k: observed[fs.PROBE_MENU[k]] for k in menu if fs.PROBE_MENU[k] in observed})
        if len(rows) > self.max_candidates_to_evaluate and unprobed:
            k = fs.best_split(space, rows, unprobed) or unprobed[0]
            return self._probe(k, f"{len(rows)} rules still fit; one more probe should narrow them down.")
        counts = fs.predictions(space, rows, test_case)
        for value in list(counts):
            if any(abs(value - t) <= 1e-6 for t in tried):
                del counts[value]
        if len(counts) > 1 and unprobed:
            k = fs.best_split(space, rows, unprobed)
            if k is not None:
                return self._probe(
                    k,
                    f"The rules that fit disagree on the test case ({len(counts)} different values); "
                    "another probe will decide.",
                )
        if not counts:
            return ExpertMove(
                Action("answer", "0"), "No rule I can think of fits these outputs; I answer 0 as a last resort."
            )
        value, _ = counts.most_common(1)[0]
        rule = next(space.expression(int(i)) for i in rows if _agrees(space.expression(int(i)), test_case, value))
        inputs = ", ".join(str(v) for v in test_case)
        return ExpertMove(
            Action("answer", format_number(value)),
            f"The outputs fit f(a, b, c, d) = {_tidy(rule)}; so f({inputs}) = {format_number(value)}.",
        )

    @staticmethod
    def _probe(k: int, why: str) -> ExpertMove:
        point = fs.PROBE_MENU[k]
        return ExpertMove(Action("action", " ".join(str(v) for v in point)), why)


_BASE_PROBE_REASONS = (
    "I start from the small inputs 1 2 3 4.",
    "Now I raise only the first input, from 1 to 2, to see its effect.",
    "Next I raise only the second input, from 2 to 3.",
    "Next I raise only the third input, from 3 to 4.",
    "Finally I raise only the fourth input, from 4 to 5.",
)


def _tidy(rule: str) -> str:
    """Drop the parentheses the enumeration puts around single variables: ``(a) + (b)`` → ``a + b``."""
    return re.sub(r"\(([a-d])\)", r"\1", rule)


def _agrees(rule: str, test_case: Sequence[int], value: float) -> bool:
    predicted = fs.evaluate_rule(rule, test_case)
    return predicted is not None and abs(predicted - value) <= 1e-6


# ---------------------------------------------------------------------------------------- Intention
_VAGUE_TASK = re.compile(r"initial vague task description:\s*(.+)", re.IGNORECASE)


class IntentionExpert(Expert):
    """Asks about one aspect per turn, most important first, offering the usual options as examples.

    Knows the aspects to clarify (description + usual options), as a domain expert would; never the
    user's preferences. It words each question so that, under the gym's coverage rule, it touches
    exactly the one aspect it is about (examples that would also touch another aspect are left out).
    """

    def __init__(self, aspects: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.aspects = [(str(d), [str(o) for o in opts]) for d, opts in aspects]

    @classmethod
    def for_task(cls, task: GymTask, *, details_paths: Sequence[str | Path] | None = None) -> IntentionExpert:
        from mimesis_pl.envs.assets import bundled_gym_file

        paths = list(details_paths) if details_paths else [bundled_gym_file("intention_details.json")]
        details = intention.load_details(paths).get(str(require(task.hidden, "id", where=task.source)), ())
        ordered = sorted(details, key=lambda d: -d.importance)
        return cls([(d.description, d.options) for d in ordered])

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        opening = opening_text(prompt)
        match = _VAGUE_TASK.search(opening)
        keysets = intention.detail_keysets(match.group(1) if match else opening, self.aspects)
        covered: set[int] = set()
        for action, _ in history:
            covered.update(intention.covered_details(action.content, keysets, covered))
        for i, (description, options) in enumerate(self.aspects):
            if i in covered:
                continue
            question = self._question(i, description, options, keysets, covered)
            if question is not None:
                phrase = _aspect_phrase(description)
                return ExpertMove(
                    Action("action", question), f"The request leaves {phrase} open; I ask about that one thing."
                )
        return ExpertMove(
            Action("action", "Is there anything else about your request I should know?"),
            "I have asked about every aspect I can think of.",
        )

    @staticmethod
    def _question(i: int, description: str, options: Sequence[str], keysets, covered: set[int]) -> str | None:
        phrase = _aspect_phrase(description)
        safe = [o for o in options if set(intention.covered_details(o, keysets, covered)) <= {i}]
        drafts = [f"Could you tell me about {phrase}?"]
        if len(safe) > 1:
            drafts.insert(0, f"Could you tell me about {phrase}? For example: {', '.join(safe[:-1])} or {safe[-1]}?")
        elif safe:
            drafts.insert(0, f"Could you tell me about {phrase}? For example: {safe[0]}?")
        exact = [q for q in drafts if intention.covered_details(q, keysets, covered) == [i]]
        if exact:
            return exact[0]
        touching = [q for q in drafts if i in intention.covered_details(q, keysets, covered)]
        return min(touching, key=lambda q: len(intention.covered_details(q, keysets, covered))) if touching else None


def _aspect_phrase(description: str) -> str:
    text = description.strip().rstrip(".")
    for prefix in ("The user's ", "the user's ", "User's ", "user's "):
        if text.startswith(prefix):
            return "your " + text[len(prefix) :]
    return "the " + text[:1].lower() + text[1:]


# ---------------------------------------------------------------------------------------- Persuade
_OPEN_POINT = re.compile(r"my point about (.+?)\.(?:\s|$)")
# Short, fixed wording: a tiny agent trained on these traces must spend its capacity on the one real
# skill, repeating the open point's words. Each copy is preceded by "point about", as the user's own
# "my point about X, Y and Z" is, so the copy is a plain look-back to the latest "about".
_OPENING = "I disagree with this claim: it does more harm than good."
_REBUTTALS = (
    "the evidence is weaker than it looks.",
    "gentler means reach the same aims.",
    "the costs outweigh the gains.",
    "that assumes the best case.",
)


class PersuadeExpert(Expert):
    """Opens against the claim, then answers, each turn, the point the user says is still open."""

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        if not history:
            return ExpertMove(Action("answer", _OPENING), "I state my case and wait for the reasons.")
        point = _OPEN_POINT.search(history[-1][1])
        rebuttal = _REBUTTALS[len(history) % len(_REBUTTALS)]
        if point is None:
            return ExpertMove(Action("answer", f"Consider the whole picture: {rebuttal}"), "No point is left open.")
        terms = point.group(1)
        return ExpertMove(
            Action("answer", f"On your point about {terms}: {rebuttal}"), f"The open point is about {terms}."
        )


# ---------------------------------------------------------------------------------------- runner
@dataclass(frozen=True)
class ExpertTurn:
    move: ExpertMove
    observation: str
    reward: float


@dataclass(frozen=True)
class ExpertTrace:
    """A played episode: the expert's turns, the episode summary and the simulator's privileged records."""

    turns: list[ExpertTurn]
    summary: EpisodeSummary
    privileged: list[PrivilegedTurn]


async def run_expert_episode(
    manager: EnvironmentManager, task: GymTask, expert: Expert, *, episode_id: str
) -> ExpertTrace:
    """Play ``task`` with ``expert`` through the manager, exactly as an agent's turns would be run."""
    episode = await manager.start(task, episode_id)
    turns: list[ExpertTurn] = []
    history: list[Turn] = []
    prompt = task.public_messages()
    while not episode.done:
        move = expert.act(prompt, history)
        observation, reward, _ = await episode.step(move.assistant_text())
        turns.append(ExpertTurn(move, observation, reward))
        history.append((move.action, observation))
    summary = await episode.finish()
    return ExpertTrace(turns, summary, list(episode.privileged))


__all__ = [
    "Expert",
    "ExpertMove",
    "ExpertTrace",
    "ExpertTurn",
    "FunctionExpert",
    "IntentionExpert",
    "PersuadeExpert",
    "TelepathyExpert",
    "TurtleExpert",
    "run_expert_episode",
]
