"""TravelGym (a folder): the gym and its scripted traveller (:mod:`.gym`), UserRL's scenario format and
the row-id naming (:mod:`.scenarios`), the synthetic scenario generator (:mod:`.generator`), the rule
grader (:mod:`.grader`), the scripted expert for generated scenarios (:mod:`.expert`) and the reference's
Travel metrics (:mod:`.metrics`), declared by :data:`SPEC`."""

from mimesis_pl.envs.gyms.travel.expert import TravelExpert
from mimesis_pl.envs.gyms.travel.gym import TravelGym, scripted_reply
from mimesis_pl.envs.spec import GymSpec, UserRLPackage

SPEC = GymSpec(
    gym=TravelGym,
    user_rule=scripted_reply,
    expert=lambda task, same_gym: TravelExpert(),
    userrl=UserRLPackage(
        "travelgym",
        "TravelEnv",
        eval_config=(
            ("one_choice_per_aspect", True),
            ("search_correct_reward", 0.2),
            ("preference_correct_reward", 0.6),
        ),
    ),
)

__all__ = ["SPEC", "TravelExpert", "TravelGym", "scripted_reply"]
