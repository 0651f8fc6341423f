"""Search backends of SearchGym: a local BM25 index over a corpus file, or an HTTP search API.

UserRL's SearchGym queries the Serper web API; neither is reachable offline, so the backend is
pluggable (docs/decisions.md A53), chosen by the ``search:`` option's ``class_path`` (:class:`SearchSettings`)::

    SearchGym: {search: {class_path: BM25SearchSettings, init_args: {corpus_path: CORPUS.jsonl}}}
    SearchGym: {search: {class_path: HttpSearchSettings, init_args: {url: http://127.0.0.1:8400/search}}}

- :class:`BM25Backend` (:class:`BM25SearchSettings`) — ``bm25s`` over a corpus file the user gives: JSONL with
  one document per line (``{"title": …, "text": …}``; ``contents``/``body`` are read as the text, ``id`` is
  kept), or a plain text file with one document per line. The index is built once per file and process.
- :class:`HttpSearchBackend` (:class:`HttpSearchSettings`) — ``POST {url} {"query": q, "k": k}`` answered with
  ``{"results": [{"title", "snippet", "url"}]}`` (e.g. a small proxy in front of Serper or a local
  search service); transport failures are retried, then raise
  :class:`~mimesis_pl.failures.EnvironmentFailure`.

A backend failure is an infrastructure failure (the episode ends as ``env_error``, unscored), never a
search that silently found nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from mimesis_pl.checks import build_choice
from mimesis_pl.envs.base import TaskDataError
from mimesis_pl.failures import EnvironmentFailure
from mimesis_pl.llm import ChatCompletionsClient, Endpoint, RetryableError
from mimesis_pl.moved import RENAMED_KINDS

SEARCH_KEY = "gym_options.SearchGym.search"


@dataclass(frozen=True)
class SearchHit:
    title: str
    snippet: str
    url: str = ""


class SearchBackend(Protocol):
    async def search(self, query: str, k: int) -> list[SearchHit]: ...

    async def aclose(self) -> None: ...


class SearchSettings:
    """Which backend SearchGym queries (``search:``, chosen by ``class_path``): :class:`BM25SearchSettings` or
    :class:`HttpSearchSettings`."""

    def build(self) -> SearchBackend:
        raise NotImplementedError


@dataclass
class BM25SearchSettings(SearchSettings):
    """A local BM25 index (:class:`BM25Backend`).

    Args:
        corpus_path: the corpus file (JSONL or text).
    """

    corpus_path: str | None = None

    def __post_init__(self) -> None:
        if not self.corpus_path:
            raise ValueError(f"{SEARCH_KEY}: BM25SearchSettings needs corpus_path (a JSONL or text corpus)")

    def build(self) -> SearchBackend:
        return BM25Backend(str(self.corpus_path))


@dataclass
class HttpSearchSettings(SearchSettings):
    """A search API at ``url`` (:class:`HttpSearchBackend`).

    Args:
        url: the search endpoint, ``http(s)://…``.
        api_key_env: environment variable holding a key sent as ``Authorization: Bearer``.
        timeout_s / max_retries: per request.
    """

    url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 30.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        if not (self.url or "").startswith(("http://", "https://")):
            raise ValueError(f"{SEARCH_KEY}: HttpSearchSettings needs url: http(s)://…, got {self.url!r}")

    def build(self) -> SearchBackend:
        return HttpSearchBackend(self)


def search_settings(value: SearchSettings | Mapping[str, Any] | None) -> SearchSettings | None:
    """The ``search:`` option as settings (``None`` when not given); an old ``kind:`` mapping is an error naming
    its ``class_path``."""
    if value is None:
        return None
    return build_choice(value, SearchSettings, key=SEARCH_KEY, renamed_kinds=RENAMED_KINDS["search backend"])


def read_corpus(path: str | Path) -> list[SearchHit]:
    """Documents of a corpus file (JSONL objects or plain lines); errors name the file and line."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise TaskDataError(f"cannot read search corpus {path}: {err}") from None
    docs: list[SearchHit] = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if not line.startswith("{"):
            docs.append(SearchHit(title="", snippet=line))
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise TaskDataError(f"{path}:{n}: not a JSON object ({err.msg})") from None
        text = record.get("text") or record.get("contents") or record.get("body")
        if not isinstance(text, str) or not text.strip():
            raise TaskDataError(f"{path}:{n}: field 'text' (or 'contents'/'body') is missing or empty")
        title, doc_id = str(record.get("title") or ""), str(record.get("id", ""))
        docs.append(SearchHit(title=title, snippet=text.strip(), url=doc_id))
    if not docs:
        raise TaskDataError(f"search corpus {path} holds no documents")
    return docs


@lru_cache(maxsize=4)
def _index(path: str) -> tuple[Any, tuple[SearchHit, ...]]:
    try:
        import bm25s
    except ImportError:  # pragma: no cover - depends on the installation
        raise ImportError("SearchGym's bm25 backend needs bm25s: pip install 'mimesis-pl[search]'") from None
    docs = tuple(read_corpus(path))
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([f"{d.title} {d.snippet}" for d in docs], show_progress=False), show_progress=False)
    return retriever, docs


class BM25Backend:
    """BM25 (``bm25s``) over a local corpus file; documents with a zero score are not returned."""

    def __init__(self, corpus_path: str | Path) -> None:
        self.corpus_path = str(Path(corpus_path))

    async def search(self, query: str, k: int) -> list[SearchHit]:
        import bm25s

        retriever, docs = _index(self.corpus_path)
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.ids or not tokens.ids[0]:
            return []
        ids, scores = retriever.retrieve(tokens, k=min(k, len(docs)), show_progress=False)
        return [docs[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if float(s) > 0.0]

    async def aclose(self) -> None:
        return None


class HttpSearchBackend:
    """A search API over HTTP (see the module docstring for the request and response)."""

    def __init__(self, settings: HttpSearchSettings) -> None:
        self.settings = settings
        self._client = ChatCompletionsClient(Endpoint.of(settings, str(settings.url)), EnvironmentFailure, path="")

    async def search(self, query: str, k: int) -> list[SearchHit]:
        def read(payload: dict[str, Any]) -> list[SearchHit]:
            results = payload.get("results")
            if not isinstance(results, list):
                raise RetryableError(f"search API answered without a 'results' list: {str(payload)[:120]}")
            hits = []
            for r in results[:k]:
                if not isinstance(r, Mapping):
                    raise RetryableError("search API result is not an object")
                hits.append(SearchHit(str(r.get("title") or ""), str(r.get("snippet") or ""), str(r.get("url") or "")))
            return hits

        return await self._client.call({"query": query, "k": k}, read, what=f"search API {self.settings.url}")

    async def aclose(self) -> None:
        await self._client.aclose()
