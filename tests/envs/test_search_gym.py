"""SearchGym: answer grading as UserRL's (normalised exact match, then the served judge), BM25 and HTTP
search backends, the search budget, and backend failures as infrastructure failures (A53)."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from aiohttp import web
from gym_fixtures import PARQUET, needs_userrl
from gym_judge_server import reply, served_judge

from mimesis_pl.envs import Action, EnvironmentManager, GymTask, TaskDataError, Termination, read_gym_tasks
from mimesis_pl.envs.gyms.search import (
    BM25Backend,
    BM25SearchSettings,
    HttpSearchSettings,
    SearchGym,
    answers_match,
    normalize_answer,
    read_corpus,
)
from mimesis_pl.moved import RENAMED_KINDS

HTTP = "mimesis_pl.envs.gyms.search.HttpSearchSettings"


def bm25(corpus) -> dict:
    """The ``search:`` option of a BM25 index over ``corpus``, as YAML gives it."""
    return {"class_path": "BM25SearchSettings", "init_args": {"corpus_path": str(corpus)}}


DOCS = [
    {"id": "d1", "title": "Citibank", "text": "Citibank was founded in 1812 as the City Bank of New York."},
    {"id": "d2", "title": "James Madison", "text": "James Madison was president of the United States 1809-1817."},
    {"id": "d3", "title": "Voyager 2", "text": "Voyager 2 flew past Uranus; it was launched on a Titan IIIE."},
]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n")
    return path


def search_row(gold: str = "james madison") -> dict:
    """A row shaped as bamboogle_multiturn/test.parquet's (reward_model: env_name, ground_truth, id, style)."""
    question = "Who was president of the United States in the year that Citibank was founded?"
    return {
        "data_source": "interact_searchgym",
        "prompt": [
            {"role": "system", "content": "SearchGym is a question answering environment ..."},
            {"role": "user", "content": f"{question}\nPlease make a plan to search for information step by step!"},
        ],
        "ability": "interaction",
        "reward_model": {"env_name": "SearchGym", "ground_truth": gold, "id": "Bamboogle-1", "style": "rule"},
        "extra_info": {
            "index": 0,
            "split": "test",
            "need_tools_kwargs": True,
            "tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": "SearchGym", "id": "Bamboogle-1"}}},
        },
    }


def play(gym, actions, row=None):
    async def go():
        await gym.reset(GymTask.from_row(row or search_row(), source="search-row"), episode_id="s1")
        try:
            return [await gym.step(a) for a in actions]
        finally:
            await gym.aclose()

    return go()


def test_normalised_exact_match():
    assert normalize_answer("James  Madison!") == "jamesmadison"
    assert answers_match("james madison", "James Madison.")
    assert not answers_match("Madison", "james madison")
    assert not answers_match("...", "...")  # nothing left to compare is never a match


def test_bm25_ranks_the_relevant_document_first_and_drops_unrelated(corpus):
    hits = asyncio.run(BM25Backend(corpus).search("When was Citibank founded?", 5))
    assert hits[0].title == "Citibank" and all(h.title != "Voyager 2" for h in hits)


def test_search_then_answer_rule_grader(corpus):
    gym = SearchGym(search=bm25(corpus), max_search_steps=1)
    found, refused, wrong, right = asyncio.run(
        play(
            gym,
            [
                Action("search", "Citibank founded year"),
                Action("search", "president 1812"),
                Action("answer", "Madison"),
                Action("answer", "James Madison"),
            ],
        )
    )
    assert "1. Citibank: Citibank was founded in 1812" in found.observation and found.reward == 0.0
    assert "used all 1 searches" in refused.observation
    assert (wrong.reward, wrong.done) == (0.0, False)  # the rule grader alone: no partial names
    assert (right.reward, right.done) == (1.0, True)


def test_served_judge_decides_when_exact_match_fails(corpus):
    def answer(messages):
        return reply(
            {"reasoning": "t", "judgment": "Yes" if "Madison" in messages[-1]["content"] else "No", "feedback": "f"}
        )

    async def go():
        async with served_judge(answer) as judge:
            gym = SearchGym(search=bm25(corpus), judge=judge.settings())
            (exact,) = await play(gym, [Action("answer", "james madison")])
            gym2 = SearchGym(search=bm25(corpus), judge=judge.settings())
            (partial,) = await play(gym2, [Action("answer", "President Madison")])
            return judge, exact, partial

    judge, exact, partial = asyncio.run(go())
    assert exact.done and exact.info["grader"] == "exact"
    assert (partial.reward, partial.done, partial.info["grader"]) == (1.0, True, "judge")
    assert len(judge.bodies) == 1  # an exact match never calls the judge
    text = judge.texts()[0]
    assert "Citibank was founded" in text and "President Madison" in text and "james madison" in text
    assert "Please make a plan" not in text  # the question only, not the prompt's instructions


@contextlib.asynccontextmanager
async def search_api(status: int = 200):
    seen = []

    async def handle(request):
        body = await request.json()
        seen.append(body)
        if status != 200:
            return web.json_response({"error": {"message": "down"}}, status=status)
        return web.json_response({"results": [{"title": "T", "snippet": f"about {body['query']}", "url": "u"}]})

    app = web.Application()
    app.router.add_post("/search", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/search", seen
    finally:
        await runner.cleanup()


def test_http_search_backend():
    async def go():
        async with search_api() as (url, seen):
            gym = SearchGym(search=HttpSearchSettings(url=url), max_search_results=3)
            (result,) = await play(gym, [Action("search", "citibank")])
            return result, seen

    result, seen = asyncio.run(go())
    assert result.observation == "Search results for: citibank\n1. T: about citibank"
    assert seen == [{"query": "citibank", "k": 3}]


def test_a_failing_search_backend_is_an_env_error_not_a_zero():
    async def go():
        async with search_api(status=503) as (url, seen):
            search = {"class_path": HTTP, "init_args": {"url": url, "max_retries": 1}}
            options = {"SearchGym": {"search": search}}
            manager = EnvironmentManager(gym_options=options)
            episode = await manager.start(search_row(), "ep-s")
            call = {"name": "interact_with_env", "arguments": {"choice": "search", "content": "citibank"}}
            await episode.step(f"<tool_call>{json.dumps(call)}</tool_call>")
            return episode.summary(), seen

    summary, seen = asyncio.run(go())
    assert summary.status is Termination.ENV_ERROR and "EnvironmentFailure" in summary.error
    assert len(seen) == 2


def test_corpus_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "a", "text": "fine"}\n{"title": "b"}\n')
    with pytest.raises(TaskDataError, match="bad.jsonl:2: field 'text'"):
        read_corpus(bad)
    plain = tmp_path / "plain.txt"
    plain.write_text("one document\n\nanother one\n")
    assert [d.snippet for d in read_corpus(plain)] == ["one document", "another one"]
    with pytest.raises(ValueError, match="BM25SearchSettings needs corpus_path"):
        SearchGym(search={"class_path": "BM25SearchSettings"})
    with pytest.raises(ValueError, match="SearchGym needs the option search"):
        SearchGym()
    with pytest.raises(ValueError, match=r"search: unknown keys \['corpus'\] for BM25SearchSettings"):
        SearchGym(search={"class_path": "BM25SearchSettings", "init_args": {"corpus": "x"}})


@needs_userrl
def test_real_bamboogle_rows_run(corpus):
    task = read_gym_tasks(PARQUET / "bamboogle_multiturn" / "test.parquet", limit=1)[0]
    assert task.env_name == "SearchGym"
    gym = SearchGym(search=bm25(corpus))

    async def go():
        await gym.reset(task, episode_id="b")
        return await gym.step(Action("answer", task.hidden["ground_truth"]))

    assert asyncio.run(go()).reward == 1.0


@pytest.mark.parametrize(
    ("answer", "gold"),
    [("Zürich", "Zurich"), ("Zürich", "zürich"), ("Ōsaka", "Osaka"), ("Москва", "москва"), ("1,234", "1234")],
)
def test_answers_are_normalised_as_userrl_normalises_them(answer, gold):
    def userrl_normalize(text):  # independent port of UserRL's answer_normalize (str.isalnum, any script)
        return "".join(ch.lower() for ch in text if ch.isalnum())

    assert answers_match(answer, gold) == (userrl_normalize(answer) == userrl_normalize(gold))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"kind": "bm25", "corpus_path": "c.jsonl"}, "mimesis_pl.envs.gyms.search.BM25SearchSettings"),
        ({"kind": "http", "url": "http://127.0.0.1:9/search"}, HTTP),
    ],
)
def test_the_old_kind_spelling_fails_naming_its_class_path(old, new):
    assert RENAMED_KINDS["search backend"][old["kind"]] == new
    with pytest.raises(ValueError, match=f"gym_options.SearchGym.search: 'kind: {old['kind']}' was replaced") as err:
        SearchGym(search=old)
    assert f"class_path: {new}" in str(err.value)


@pytest.mark.parametrize("class_path", ["BM25SearchSettings", "mimesis_pl.envs.gyms.search.BM25SearchSettings"])
def test_a_backend_is_named_by_its_bare_class_name_or_full_path(corpus, class_path):
    gym = SearchGym(search={"class_path": class_path, "init_args": {"corpus_path": str(corpus)}})
    assert isinstance(gym.backend, BM25Backend) and gym.backend.corpus_path == str(corpus)
    http = SearchGym(search={"class_path": HTTP, "init_args": {"url": "http://127.0.0.1:9/search"}})
    assert http.backend.settings == HttpSearchSettings(url="http://127.0.0.1:9/search")
    assert BM25SearchSettings(corpus_path="c").build().corpus_path == "c"
    with pytest.raises(ValueError, match="HttpSearchSettings needs url: http"):
        HttpSearchSettings(url="127.0.0.1:9/search")
