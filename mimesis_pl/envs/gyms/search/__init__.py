"""SearchGym (Bamboogle questions) and its pluggable search backends, declared by :data:`SPEC` (no user, no
scripted expert)."""

from mimesis_pl.envs.gyms.search.backends import (
    BM25Backend,
    BM25SearchSettings,
    HttpSearchBackend,
    HttpSearchSettings,
    SearchHit,
    SearchSettings,
    read_corpus,
)
from mimesis_pl.envs.gyms.search.gym import SearchGym, answers_match, normalize_answer
from mimesis_pl.envs.spec import GymSpec, UserRLPackage

SPEC = GymSpec(gym=SearchGym, userrl=UserRLPackage("searchgym", "SearchEnv", eval_config=(("eval_method", "llm"),)))

__all__ = [
    "BM25Backend",
    "BM25SearchSettings",
    "HttpSearchBackend",
    "HttpSearchSettings",
    "SPEC",
    "SearchGym",
    "SearchHit",
    "SearchSettings",
    "answers_match",
    "normalize_answer",
    "read_corpus",
]
