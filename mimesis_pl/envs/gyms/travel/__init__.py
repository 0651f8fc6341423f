"""TravelGym (a folder): the gym and its scripted traveller (:mod:`.gym`), UserRL's scenario format and
the row-id naming (:mod:`.scenarios`), the synthetic scenario generator (:mod:`.generator`), the rule
grader (:mod:`.grader`), the scripted expert for generated scenarios (:mod:`.expert`) and the reference's
Travel metrics (:mod:`.metrics`)."""

from mimesis_pl.envs.gyms.travel.gym import TravelGym, scripted_reply

__all__ = ["TravelGym", "scripted_reply"]
