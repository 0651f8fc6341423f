"""Moved to :mod:`mimesis_pl.eval.values` (the trial keys, the cache and the suites use it too); this old path
re-exports it."""

from mimesis_pl.eval.values import canonical_json, freeze, json_equal, json_value_problem, thaw

__all__ = ["canonical_json", "freeze", "json_equal", "json_value_problem", "thaw"]
