"""SearchGym (Bamboogle questions) and its pluggable search backends."""

from mimesis_pl.envs.gyms.search.backends import (
    BM25Backend,
    HttpSearchBackend,
    SearchHit,
    SearchSettings,
    read_corpus,
)
from mimesis_pl.envs.gyms.search.gym import SearchGym, answers_match, normalize_answer

__all__ = [
    "BM25Backend",
    "HttpSearchBackend",
    "SearchGym",
    "SearchHit",
    "SearchSettings",
    "answers_match",
    "normalize_answer",
    "read_corpus",
]
