"""FunctionGym's home: the gym (:mod:`.gym`), its expert (:mod:`.expert`) and the expert's rule solver
(:mod:`.solver`), declared by :data:`SPEC`. The gym needs no user simulator, so it has no scripted user rule."""

from mimesis_pl.envs.gyms.function.expert import FunctionExpert
from mimesis_pl.envs.gyms.function.gym import (
    ANSWER_TOLERANCE,
    RESULT_LIMIT,
    FunctionGym,
    compile_rule,
    evaluate_rule,
    format_number,
    load_functions,
)
from mimesis_pl.envs.spec import GymSpec, UserRLPackage

SPEC = GymSpec(
    gym=FunctionGym,
    expert=lambda task, same_gym: FunctionExpert(),
    userrl=UserRLPackage("functiongym", "FunctionEnv", scoped_base_url=False),
)

__all__ = [
    "ANSWER_TOLERANCE",
    "RESULT_LIMIT",
    "FunctionExpert",
    "FunctionGym",
    "SPEC",
    "compile_rule",
    "evaluate_rule",
    "format_number",
    "load_functions",
]
