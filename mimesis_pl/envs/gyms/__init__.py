"""The built-in offline gyms, one home each: environment, scripted user rule (``scripted_reply``) and expert.

- :mod:`.function` (a folder: gym, expert, the expert's rule solver; no user),
- :mod:`.telepathy`, :mod:`.turtle` (guessing gyms; their experts share :mod:`.cards`),
- :mod:`.intention`, :mod:`.persuade`,
- :mod:`.travel` (a folder: gym, UserRL's scenario format, the scenario generator, rule grader, expert, metrics),
- :mod:`.search` (SearchGym and its search backends; no user), :mod:`.tau` (TauGym, its HTTP tool runtimes and
  our own offline retail environment),
- :mod:`.judging`: the served judges of the judged gyms (the rule graders stay the offline default).

Each gym declares its parts in its module's ``SPEC`` (a :class:`mimesis_pl.envs.spec.GymSpec`), listed in
:mod:`mimesis_pl.envs.catalog` and served by the registry (:mod:`mimesis_pl.envs.registry`). What the scripted
rules share is in :mod:`.rules`; the user that applies them is :class:`mimesis_pl.users.ScriptedUser`.
"""
