"""TravelGym: elicit a traveller's hidden preferences, search the options, recommend one per aspect.

Our implementation of UserRL's TravelGym rules, per choice:

- ``search`` (a request naming one aspect): every ``search_failure_interval``-th search returns a
  simulated backend error (deliberate, as UserRL). A request the grader aligns with an aspect not yet
  searched returns the option schema and every option of that aspect, reward ``search_correct_reward``;
  anything else a fixed refusal, 0.
- ``action`` (talk to the traveller): the grader types the utterance (1 small talk, 2 a concrete ask
  about a hidden preference, 3 a concrete ask about nothing the traveller has, 4 too vague). Type 2 pays
  ``preference_correct_reward`` and the user simulator reveals that preference implicitly. After
  ``elicitation_interval`` non-preference turns in a row the next one is UserRL's proactive turn: in
  UserRL's async step (its training and evaluation) that branch crashes and the traveller answers with a
  canned apology, revealing nothing (``proactive_reveal="userrl"``, the default); ``"reveal"`` reveals a
  remaining preference instead (reward 0), as UserRL's code means to (A82). Types 3/4 get fixed replies;
  type 1 a neutral user reply.
- ``answer`` (option ids, comma-separated): per id 1.0 for the aspect's best option, 0.8 for a correct
  one, 0 otherwise, summed (UserRL: "A17, C16" can pay 2.0); one choice per aspect, and choosing an aspect
  drops its remaining preferences. ``multi_id_answers="refuse"`` refuses an answer with several ids (A83).

The episode ends when every best option is chosen or every aspect has a choice (UserRL's sync rule;
its async step, used in training, forgot the latter: A44). Rewards are UserRL's: an answer's is floored
at 0, nothing is capped (preference and answer rewards add up, as in UserRL: A40, A83). Scenarios come from
UserRL's files when ``scenarios_path`` is given, else they are generated from the row's id (A42).
Training uses UserRL's training rewards (search 0.0, preference 0.8); evaluation sets 0.2 / 0.6.
The grader is the keyword rule grader offline, or with ``judge: {class_path: ServedChatSettings, init_args: {url,
model}}`` a served judge seeing what UserRL's judge sees (A43); a judge that keeps failing is ``judge_error``,
never a 0 (A48).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError
from mimesis_pl.envs.gyms.judging import GymJudge, judge_settings
from mimesis_pl.envs.gyms.rules import persona_field
from mimesis_pl.envs.gyms.travel.generator import generate_scenario
from mimesis_pl.envs.gyms.travel.grader import RuleGrader, TravelGrader, TravelTurn, answer_kind
from mimesis_pl.envs.gyms.travel.judge import ServedGrader
from mimesis_pl.envs.gyms.travel.scenarios import (
    TravelPreference,
    TravelScenario,
    parse_best_ids,
    scenario_from_record,
    scenario_records,
)
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator

PERSONA_TEMPLATE = """\
You are a traveller talking to a travel agent who is planning your trip. Stay in character and reply in \
one or two sentences.
- If the persona below has a "preference", convey it only implicitly, in the spirit of its \
"implicit_elicitation" statement: never state it outright and reveal no other preference.
- If it has none, reply naturally and briefly without revealing any preference.
<persona>
{persona}
</persona>"""

SEARCH_ERROR = "Currently the searching backend is experiencing some issues. Please try again later."
SEARCH_REPEATED = (
    "You have provided the correct search request arguments. However, you have already got the search results "
    "for <{aspect}> in previous search attempts. Please directly refer to the previous search results."
)
SEARCH_FALSE = (
    "There's something wrong with your search request, or its arguments are not accurate. Please refine it to "
    "1. align with the user's need, 2. make only one request at a time, and 3. cover only correct arguments."
)
SEARCH_NA = (
    "Your search request is not related to any aspect of this trip. Please refine it to 1. align with the "
    "user's need, 2. make only one request at a time, and 3. cover only correct arguments."
)
NO_SUCH_PREFERENCE = (
    "This is a good question. However, I do not have a specific preference on what you ask about (or I have "
    "already told you). You may ask me about other detailed and specific preferences."
)
TOO_VAGUE = (
    "Your question is too vague and general, and I am not sure how to respond. Please ask me about specific "
    "aspects of my preferences, in a more detailed and concrete way."
)
ANSWER_TEXT = {
    "best": "Your chosen option is the best option!",
    "correct": "Your chosen option is a correct option, but not the best option.",
    "wrong": "Your chosen option is not one of the best or correct options.",
    "multiple": "You have chosen multiple options. Please choose only one option at a time.",
    "several": "Your chosen options: {kinds}.",
    "format": "Invalid option ID format detected for '{oid}'. Expected format: H1, F12, C4, etc.",
    "repeated": (
        "You have already recommended an option for this travel aspect. You are allowed to recommend only one "
        "option per aspect. Please focus on the other travel aspects now."
    ),
    "foreign": "Option '{oid}' is not for any travel aspect of this trip.",
}
RECORDED = " Your choice is recorded; do not choose options of this travel aspect again."
# UserRL's async step answers its (crashing) proactive turn with this fallback text.
PROACTIVE_FALLBACK = "I'm sorry, I'm not sure how to respond to your latest utterance right now. Please try again."
# Judge-side notes on the agent's turns, kept in the history the utterance judge reads (as UserRL's).
TURN_NOTES = {
    1: "Not a request for a preference; the traveller replied naturally.",
    2: "Asked concretely about preference {pid}; the traveller hinted at it implicitly.",
    3: "Asked concretely about something the traveller has no unrevealed preference on.",
    4: "Too vague to answer; the traveller asked for a more specific question.",
    "proactive": "Off target for several turns; the traveller volunteered preference {pid} implicitly.",
    "fallback": "The traveller's reply failed; a canned apology was given.",
}
ProactiveReveal = Literal["userrl", "reveal"]
MultiIdAnswers = Literal["userrl", "refuse"]


class TravelGym(Gym):
    """Preference elicitation, search and recommendation over one travel scenario."""

    env_name = "TravelGym"
    data_sources = ("interact_travelgym",)
    choices = ("search", "action", "answer")
    reward_bounds = "none"  # UserRL's rewards: answers floored at 0 here, nothing capped (A83)

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        scenarios_path: str | Path | Sequence[str | Path] | None = None,
        search_correct_reward: float = 0.0,
        preference_correct_reward: float = 0.8,
        choice_best_reward: float = 1.0,
        choice_correct_reward: float = 0.8,
        wrong_choice_penalty: float = 0.0,
        search_failure_interval: int = 5,
        elicitation_interval: int = 3,
        judge: Mapping[str, Any] | None = None,
        seed: int = 0,
        proactive_reveal: ProactiveReveal = "userrl",
        multi_id_answers: MultiIdAnswers = "userrl",
    ) -> None:
        super().__init__(user=user)
        if isinstance(scenarios_path, (str, Path)):
            scenarios_path = [scenarios_path]
        self.scenario_paths = tuple(str(p) for p in scenarios_path or ())
        self.rewards = {
            "search": float(search_correct_reward),
            "preference": float(preference_correct_reward),
            "best": float(choice_best_reward),
            "correct": float(choice_correct_reward),
            "wrong": -float(wrong_choice_penalty),
        }
        if search_failure_interval < 1 or elicitation_interval < 1:
            raise ValueError("TravelGym: search_failure_interval and elicitation_interval must be >= 1")
        self.search_failure_interval = search_failure_interval
        self.elicitation_interval = elicitation_interval
        if proactive_reveal not in ("userrl", "reveal"):
            raise ValueError(f"TravelGym: proactive_reveal must be 'userrl' or 'reveal', got {proactive_reveal!r}")
        if multi_id_answers not in ("userrl", "refuse"):
            raise ValueError(f"TravelGym: multi_id_answers must be 'userrl' or 'refuse', got {multi_id_answers!r}")
        self.proactive_reveal = proactive_reveal
        self.multi_id_answers = multi_id_answers
        self.grader: TravelGrader = grader_for(judge)
        self.seed = seed

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Set-up check (E28): every scenario of ``scenarios_path`` reads and parses."""
        paths = options.get("scenarios_path") or ()
        for sid, (path, record) in scenario_records([paths] if isinstance(paths, (str, Path)) else paths).items():
            scenario_from_record(sid, record, where=path)

    # ------------------------------------------------------------------ episode
    async def _reset(self, task: GymTask) -> None:
        self.scenario = self._scenario_for(task)
        self._remaining: list[TravelPreference] = list(self.scenario.preferences)
        self._searched: set[str] = set()
        self._searches = 0
        self._off_target = 0
        self._chosen: dict[str, str] = {}
        self._best_left = set(self.scenario.best_ids.values())
        self._reveal: tuple[str, TravelPreference | None] = ("chat", None)
        self._rng = random.Random(f"{self.seed}:{self.scenario.scenario_id}:{self.episode_id}")
        self._history: list[TravelTurn] = []

    async def aclose(self) -> None:
        await self.grader.aclose()

    def _log(self, said: str, heard: str, *, role: Literal["user", "database"] = "user", note: str = "") -> None:
        """One exchange in the history the utterance judge reads (answers are not in it, as UserRL's)."""
        self._history += [TravelTurn("agent", said, note), TravelTurn(role, heard)]

    def _scenario_for(self, task: GymTask) -> TravelScenario:
        task_id = task.key
        if self.scenario_paths:
            records = scenario_records(self.scenario_paths)
            if task_id not in records:
                where = ", ".join(self.scenario_paths)
                raise TaskDataError(f"{task.source}: TravelGym scenario {task_id!r} is in none of {where}")
            path, record = records[task_id]
            return scenario_from_record(task_id, record, where=path)
        best = parse_best_ids(task.hidden.get("ground_truth", ""), where=task.source)
        return scenario_from_record(task_id, generate_scenario(task_id, best, seed=self.seed), where="generated")

    def _persona_prompt(self) -> str:
        mode, pref = self._reveal
        persona: dict[str, Any] = {"gym": self.env_name, "scenario": self.scenario.scenario, "mode": mode}
        if pref is not None:
            persona["preference"] = {
                "aspect": pref.aspect,
                "subcategory": pref.subcategory,
                "preference": pref.preference,
                "implicit_elicitation": pref.implicit_elicitation,
            }
        return PERSONA_TEMPLATE.format(persona=json.dumps(persona, ensure_ascii=False, indent=1))

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "search":
            return await self._search(action.content)
        if action.choice == "action":
            return await self._talk(action.content)
        return self._answer(action.content)

    async def _search(self, request: str) -> StepResult:
        self._searches += 1
        if self._searches % self.search_failure_interval == 0:
            self._log(request, SEARCH_ERROR, role="database")
            return self._result(SEARCH_ERROR, search="backend_error")
        verdict, aspect = await self.grader.search(request, self.scenario)
        if verdict == "True" and aspect is not None:
            if aspect in self._searched:
                self._log(request, SEARCH_REPEATED.format(aspect=aspect), role="database")
                return self._result(SEARCH_REPEATED.format(aspect=aspect), search="repeated")
            self._searched.add(aspect)
            lines = [json.dumps(o, ensure_ascii=False) for o in self.scenario.options[aspect]]
            text = "\n".join(
                [
                    "You have provided the correct search request arguments.",
                    "",
                    option_schema_for(aspect, self.scenario),
                    "",
                    f"Here are all the options for <{aspect}>:",
                    *lines,
                ]
            )
            self._log(request, text.split("\n")[0] + " (results not repeated here)", role="database")
            return self._result(text, self.rewards["search"], search="aligned")
        refusal = SEARCH_NA if verdict == "N/A" else SEARCH_FALSE
        self._log(request, refusal, role="database")
        return self._result(refusal, search=verdict)

    async def _talk(self, utterance: str) -> StepResult:
        kind, pref = await self.grader.classify(utterance, self.scenario, self._remaining, self._history)
        if kind == 2 and pref is not None:
            self._off_target = 0
            return await self._reveal_to(utterance, "reveal", pref, self.rewards["preference"], kind)
        if self._off_target >= self.elicitation_interval and self._remaining:
            self._off_target = 0
            if self.proactive_reveal == "userrl":  # UserRL's async step: the branch raises, the fallback answers
                self._log(utterance, PROACTIVE_FALLBACK, note=TURN_NOTES["fallback"])
                return self._result(PROACTIVE_FALLBACK, utterance_type=kind, how="proactive_fallback")
            return await self._reveal_to(utterance, "proactive", self._rng.choice(self._remaining), 0.0, kind)
        self._off_target += 1
        if kind in (3, 4):
            canned = NO_SUCH_PREFERENCE if kind == 3 else TOO_VAGUE
            self._log(utterance, canned, note=TURN_NOTES[kind])
            return self._result(canned, utterance_type=kind)
        self._reveal = ("chat", None)
        reply = await self._ask_user(utterance)
        self._log(utterance, reply.public, note=TURN_NOTES[1])
        return self._result(reply.public, user=reply, utterance_type=kind)

    async def _reveal_to(
        self, utterance: str, mode: str, pref: TravelPreference, reward: float, kind: int
    ) -> StepResult:
        self._reveal = (mode, pref)
        reply = await self._ask_user(utterance)
        self._remaining.remove(pref)
        self._log(utterance, reply.public, note=TURN_NOTES[2 if mode == "reveal" else "proactive"].format(pid=pref.pid))
        return self._result(reply.public, reward, user=reply, utterance_type=kind, elicited=pref.pid, how=mode)

    def _answer(self, content: str) -> StepResult:
        """UserRL's answer rule: each comma-separated id in turn; a refused id stops the answer with 0 (the ids
        before it stay chosen, as UserRL's state does), else the ids' rewards summed and floored at 0."""
        ids = split_answer(content)
        if len(ids) > 1 and self.multi_id_answers == "refuse":
            return self._result(ANSWER_TEXT["multiple"], answer="multiple")
        kinds: list[str] = []
        total = 0.0
        for oid in ids:
            kind = answer_kind(oid, self.scenario, self._chosen, self._best_left)
            if kind in ("multiple", "format", "repeated", "foreign"):
                return self._result(ANSWER_TEXT[kind].format(oid=oid), answer=kind, done=self._all_chosen())
            aspect = self.scenario.aspect_of(oid)
            assert aspect is not None
            self._chosen[aspect] = oid
            self._best_left.discard(oid)
            self._remaining = [p for p in self._remaining if p.dimension != aspect]
            kinds.append(kind)
            total += self.rewards[kind]
        text = ANSWER_TEXT[kinds[0]] if len(kinds) == 1 else ANSWER_TEXT["several"].format(kinds=", ".join(kinds))
        aspects = [self.scenario.aspect_of(o) for o in ids]
        info = {"answer": kinds[0], "aspect": aspects[0]} if len(ids) == 1 else {"answer": "several", "kinds": kinds}
        return self._result(text + RECORDED, max(total, 0.0), done=self._all_chosen(), **info)

    def _all_chosen(self) -> bool:
        """Every best option chosen (UserRL's end) or every aspect answered (its sync step's, A44)."""
        return not self._best_left or len(self._chosen) == len(self.scenario.dimensions)


def split_answer(content: str) -> list[str]:
    """UserRL's split of an answer into ids: ``"A17, C16"`` → ``["A17", "C16"]``."""
    return [i.strip() for i in content.strip().split(",")]


def option_schema_for(aspect: str, scenario: TravelScenario) -> str:
    """The schema line shown with search results: the fields the aspect's options carry."""
    fields = sorted({k for o in scenario.options.get(aspect, ()) for k in o})
    return f"Each <{aspect}> option has: {', '.join(fields)}."


def grader_for(judge: Any) -> TravelGrader:
    """The grader a ``judge:`` setting names, read as every judged gym reads it
    (:func:`~mimesis_pl.envs.gyms.judging.judge_settings`): the rule grader offline (no judge, or
    ``ScriptedChatSettings``), else the served judge asking what UserRL's judge is asked (A43)."""
    settings = judge_settings(judge, where="TravelGym")
    return RuleGrader() if settings is None else ServedGrader(GymJudge(settings, gym=TravelGym.env_name))


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The scripted traveller: the implicit statement of the preference to reveal, or a neutral line."""
    mode = str(persona_field(persona, "mode"))
    pref = persona.get("preference")
    if mode in ("reveal", "proactive") and isinstance(pref, Mapping):
        statement = str(pref.get("implicit_elicitation") or pref.get("preference") or "")
        lead = "By the way, " if mode == "proactive" else ""
        reasoning = (
            f"My {pref.get('aspect')} preference on {pref.get('subcategory')}: {pref.get('preference')} "
            + ("The agent asked about it" if mode == "reveal" else "The agent has been off target")
            + ", so I hint at it without saying it outright."
        )
        return UserReply(lead + (statement[:1].lower() + statement[1:] if lead else statement), reasoning)
    return UserReply(
        "Sounds fine to me. I don't have much to add on that.",
        "Nothing the agent said touches what I care about, so I answer briefly and reveal nothing.",
    )
