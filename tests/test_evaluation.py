"""The GraphRAG paper's head-to-head evaluation: question generation, two-order judging, win rates.

Fakes check our own logic (order mapping, scoring, intervals, bad input); the SmolLM2 GGUF checks
that the grammar-constrained prompts parse through the real llama.cpp path.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from _fakes import FakeLLM

from tiny_graphrag.errors import InputError
from tiny_graphrag.evaluation.head_to_head import (
    CRITERIA,
    Answer,
    Verdict,
    clip,
    collect_answers,
    evaluate,
    judge,
    win_rates,
)
from tiny_graphrag.evaluation.questions import Question, generate_questions, questions_from_reports
from tiny_graphrag.records import Report

ROOT = Path(__file__).resolve().parents[1]
SMOL = Path(os.environ.get("TINY_GRAPHRAG_MODELS", ROOT / "models")) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _answers(mode: str, texts: list[str]) -> list[Answer]:
    return [Answer(mode, f"q{i}", t, 0.0, 1) for i, t in enumerate(texts)]


def _questions(n: int) -> list[Question]:
    return [Question(f"q{i}") for i in range(n)]


def _answer_block(prompt: str, k: int) -> str:
    return prompt.split(f"---Answer {k}---")[1].split(f"---End of answer {k}---")[0]


def _prefers(word: str):
    """A judge that picks the answer containing `word`, whatever its position (a perfect judge)."""

    def respond(messages, schema, max_tokens):
        prompt = messages[-1]["content"]
        one, two = word in _answer_block(prompt, 1), word in _answer_block(prompt, 2)
        return {"reason": "r", "winner": "1" if one and not two else "2" if two and not one else "tie"}

    return respond


# ---- judging and scoring -----------------------------------------------------------------------
def test_consistent_judge_gives_full_win_and_full_agreement():
    llm = FakeLLM(_prefers("GOOD"))
    verdicts = judge(llm, _questions(3), _answers("global", ["GOOD"] * 3), _answers("naive", ["bad"] * 3))
    assert len(verdicts) == 3 * len(CRITERIA)
    assert len(llm.backend.requests) == 2 * 3 * len(CRITERIA)  # every pair in both orders
    assert all(v.a_first == v.b_first == "a" and v.agree for v in verdicts)
    rates = {r.criterion: r for r in win_rates(verdicts)}
    assert set(rates) == set(CRITERIA) | {"all"}
    for r in rates.values():
        assert (r.win_rate, r.low, r.high, r.agreement) == (1.0, 1.0, 1.0, 1.0)
        assert r.first_wins == 0.5  # A won shown first and shown second: no position bias


def test_position_biased_judge_scores_half_and_never_agrees():
    llm = FakeLLM(lambda m, s, t: {"reason": "first is best", "winner": "1"})
    verdicts = judge(llm, _questions(4), _answers("global", ["x"] * 4), _answers("naive", ["y"] * 4))
    assert all(v.a_first == "a" and v.b_first == "b" and v.agree is False for v in verdicts)
    total = next(r for r in win_rates(verdicts) if r.criterion == "all")
    assert total.win_rate == 0.5 and total.agreement == 0.0 and total.first_wins == 1.0
    assert total.a_wins == total.b_wins == 4 * len(CRITERIA)


def test_criterion_comes_last_so_orders_share_a_prefix():
    llm = FakeLLM(lambda m, s, t: {"reason": "r", "winner": "tie"})
    judge(llm, _questions(1), _answers("global", ["alpha"]), _answers("naive", ["beta"]))
    prompts = [r["messages"][-1]["content"] for r in llm.backend.requests]
    first_order, second_order = prompts[: len(CRITERIA)], prompts[len(CRITERIA) :]
    prefix = first_order[0].split("Criterion:")[0]
    assert all(p.startswith(prefix) for p in first_order)
    assert "alpha" in _answer_block(first_order[0], 1) and "alpha" in _answer_block(second_order[0], 2)
    for name, p in zip(CRITERIA, first_order):
        assert f"Criterion: {name}. {CRITERIA[name]}" in p
    assert all(r["schema"]["properties"]["winner"]["enum"] == ["1", "2", "tie"] for r in llm.backend.requests)


def test_citations_are_stripped_before_judging():
    llm = FakeLLM(lambda m, s, t: {"reason": "r", "winner": "tie"})
    judge(
        llm,
        _questions(1),
        _answers("global", ["Obama won [Data: Reports (1, 2)]."]),
        _answers("naive", ["He won [Data: Sources (3)]."]),
    )
    prompt = llm.backend.requests[0]["messages"][-1]["content"]
    assert "[Data:" not in prompt and "Obama won" in prompt


def test_unusable_verdict_scores_from_the_other_order():
    assert Verdict(0, "c", "a", None).score == 1.0 and Verdict(0, "c", "a", None).agree is None
    assert Verdict(0, "c", None, None).score == 0.5
    assert Verdict(0, "c", "tie", "b").score == 0.25
    rates = {r.criterion: r for r in win_rates([Verdict(0, "c", None, None), Verdict(1, "c", "a", "a")])}
    assert rates["c"].unusable == 2 and rates["c"].agreement == 1.0 and rates["c"].win_rate == 0.75


def test_win_rate_interval_resamples_questions():
    # 10 questions: A wins 7 in both orders, loses 3 in both orders.
    verdicts = [Verdict(i, "c", w, w) for i, w in enumerate("aaaaaaabbb")]
    r = win_rates(verdicts, resamples=4000, seed=1)[0]
    assert r.win_rate == pytest.approx(0.7)
    assert 0.3 <= r.low < 0.7 < r.high <= 1.0
    assert r.high - r.low > 0.3  # 10 questions cannot pin a win rate down
    assert win_rates(verdicts, seed=1) == win_rates(verdicts, seed=1)  # seeded: reproducible


def test_clip_cuts_to_the_token_budget():
    llm = FakeLLM()  # one token per word
    assert clip(llm, "a b c", 5) == "a b c"
    assert clip(llm, " ".join(map(str, range(100))), 10) == "0 1 2 3 4 5 6 7 8 9 ..."


def test_long_answers_are_clipped_for_the_judge():
    llm = FakeLLM(lambda m, s, t: {"reason": "r", "winner": "tie"})
    judge(llm, _questions(1), _answers("global", ["w " * 5000]), _answers("naive", ["v " * 5000]), answer_tokens=50)
    assert all(r["messages"][-1]["content"].count("w ") <= 51 for r in llm.backend.requests)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda llm: judge(llm, _questions(2), _answers("global", ["x"]), _answers("naive", ["y"])), "2 questions"),
        (lambda llm: judge(llm, _questions(1), _answers("g", ["x"]), _answers("n", ["y"]), criteria={}), "criteria"),
        (lambda llm: generate_questions(llm, "a corpus", 0), "questions must be"),
        (lambda llm: generate_questions(llm, "  ", 3), "description is empty"),
        (lambda llm: questions_from_reports(llm, [], 3), "no community reports"),
    ],
)
def test_bad_input_names_the_problem(call, message):
    with pytest.raises(InputError, match=message):
        call(FakeLLM())


# ---- questions ---------------------------------------------------------------------------------
def _question_writer(messages, schema, max_tokens):
    prompt = messages[-1]["content"]
    n = schema["properties"][next(iter(schema["properties"]))]["maxItems"]
    if "users" in schema["properties"]:
        return {"users": [{"name": f"user{i}", "description": f"reads it for reason {i}"} for i in range(n)]}
    if "tasks" in schema["properties"]:
        user = prompt.split("User: ")[1].split(":")[0]
        return {"tasks": [f"{user} task{i}" for i in range(n)]}
    task = prompt.split("Task: ")[1].split("\n")[0]
    return {"questions": [f"What do the texts say overall about {task} ({i})?" for i in range(n)]}


def test_personas_tasks_questions_round_robin():
    llm = FakeLLM(_question_writer)
    qs = generate_questions(llm, "News articles about a politician.", 5, tasks=2, per_task=1)
    assert len(qs) == 5
    # 3 users x 2 tasks; the first three questions come from three different users.
    assert [q.persona.split(":")[0] for q in qs[:3]] == ["user0", "user1", "user2"]
    assert all(q.task in q.text for q in qs)
    schemas = [r["schema"] for r in llm.backend.requests]
    assert schemas[0]["properties"]["users"]["minItems"] == schemas[0]["properties"]["users"]["maxItems"] == 3
    assert len(llm.backend.requests) == 1 + 3 + 3 * 2  # users, tasks per user, questions per (user, task)


def test_duplicate_questions_are_dropped():
    llm = FakeLLM(lambda m, s, t: {"questions": ["Same?", "same? ", "Other?"]})
    reports = [Report("c1", 0, "Title", "Summary", 5.0, "why")]
    assert [q.text for q in questions_from_reports(llm, reports, 3)] == ["Same?", "Other?"]


# ---- the whole evaluation through a QueryEngine ------------------------------------------------
@pytest.fixture(scope="module")
def index(tmp_path_factory):
    from test_search_fixtures import build_test_index

    from tiny_graphrag.backends.embed import Embedder

    embedder = Embedder("all-MiniLM-L6-v2", device="cpu")
    return build_test_index(tmp_path_factory.mktemp("eval") / "idx", embedder), embedder


def _engine(index, llm):
    from tiny_graphrag.search.engine import QueryEngine

    path, embedder = index
    return QueryEngine(path, llm=llm, embedder=embedder)


def test_evaluate_end_to_end_with_fakes(index):
    answerer = FakeLLM()  # echoes: global and naive answers differ
    judge_llm = FakeLLM(
        lambda m, s, t: {"reason": "r", "winner": "1"} if "winner" in s["properties"] else _question_writer(m, s, t)
    )
    with _engine(index, answerer) as qe:
        result = evaluate(qe, judge_llm, questions=4, a="global", b="naive")
    assert len(result.questions) == len(result.answers_a) == len(result.answers_b) == 4
    assert {a.mode for a in result.answers_a} == {"global"} and {a.mode for a in result.answers_b} == {"naive"}
    data = json.loads(json.dumps(result.to_dict()))
    assert data["rates"][-1]["criterion"] == "all" and data["rates"][-1]["agreement"] == 0.0
    assert "order agreement" in result.format() and "mostly noise" in result.format()


def test_evaluate_refuses_same_or_unknown_modes(index):
    with _engine(index, FakeLLM()) as qe:
        with pytest.raises(InputError, match="both modes are 'global'"):
            evaluate(qe, FakeLLM(), a="global", b="global")
        with pytest.raises(InputError, match="unknown search mode 'drift'"):
            evaluate(qe, FakeLLM(), a="global", b="drift")
        with pytest.raises(InputError, match="unknown search mode"):
            collect_answers(qe, _questions(1), "drift")
        with pytest.raises(InputError, match="question source"):
            evaluate(qe, FakeLLM(), source="oracle")


def test_cli_evaluate_json(index, tmp_path, capsys, monkeypatch):
    from tiny_graphrag.cli import commands as cli

    path, _ = index
    questions = tmp_path / "q.txt"
    questions.write_text("What are the main themes?\nHow do the people relate?\n")
    fake = FakeLLM(lambda m, s, t: {"reason": "r", "winner": "tie"} if s else "an answer")
    monkeypatch.setattr("tiny_graphrag.evaluation.head_to_head.open_judge", lambda *a, **k: fake)
    monkeypatch.setattr("tiny_graphrag.search.engine.QueryEngine._load_llm", lambda self: fake)
    assert cli.main(["evaluate", "--index", str(path), "--questions-file", str(questions), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [q["text"] for q in data["questions"]] == ["What are the main themes?", "How do the people relate?"]
    assert data["rates"][-1]["win_rate"] == 0.5 and data["rates"][-1]["agreement"] == 1.0


# ---- the real llama.cpp path -------------------------------------------------------------------
@pytest.fixture(scope="module")
def smol():
    if not SMOL.exists():
        pytest.skip(f"{SMOL} is not there (a test model: link it into models/)")
    from tiny_graphrag.backends.llm import open_llm
    from tiny_graphrag.config import LLMConfig

    return open_llm(LLMConfig(model=str(SMOL), n_ctx=2048))


def test_smollm2_judges_both_orders_with_parsed_verdicts(smol):
    qs = [Question("What were the main stages of Barack Obama's career?")]
    a = _answers(
        "global",
        [
            "He was a community organizer in Chicago, a law professor, an Illinois state senator, "
            "a U.S. senator and the 44th president of the United States."
        ],
    )
    b = _answers("naive", ["He was president."])
    verdicts = judge(smol, qs, a, b, max_tokens=96)
    assert len(verdicts) == len(CRITERIA)
    assert all(v.a_first in ("a", "b", "tie") and v.b_first in ("a", "b", "tie") for v in verdicts)  # all parsed
    rates = win_rates(verdicts)
    assert all(0 <= r.win_rate <= 1 and r.agreement is not None for r in rates)


def test_smollm2_writes_persona_questions(smol):
    qs = generate_questions(
        smol, "A Wikipedia article about Barack Obama, the 44th U.S. president.", 2, tasks=1, per_task=1, max_tokens=200
    )
    assert 1 <= len(qs) <= 2 and all(q.text and q.persona for q in qs)


def test_repeated_users_are_dropped_and_later_prompts_see_earlier_questions():
    def writer(messages, schema, max_tokens):
        if "users" in schema["properties"]:
            return {"users": [{"name": "Same", "description": "d"}] * 3}
        return _question_writer(messages, schema, max_tokens)

    llm = FakeLLM(writer)
    qs = generate_questions(llm, "A corpus.", 6, tasks=2)
    assert len(qs) == 2  # one distinct user x 2 tasks
    question_prompts = [
        r["messages"][-1]["content"] for r in llm.backend.requests if "Task:" in r["messages"][-1]["content"]
    ]
    assert "Already asked" not in question_prompts[0] and qs[0].text in question_prompts[1]


def test_evaluate_tops_up_persona_questions_from_reports(index):
    def writer(messages, schema, max_tokens):
        props = schema["properties"]
        if "winner" in props:
            return {"reason": "r", "winner": "tie"}
        if "questions" in props and "Summaries of the main communities" in messages[-1]["content"]:
            return {"questions": [f"Report question {i}?" for i in range(props["questions"]["maxItems"])]}
        if "users" in props:
            return {"users": [{"name": "Only", "description": "d"}]}
        return _question_writer(messages, schema, max_tokens)

    with _engine(index, FakeLLM()) as qe:
        result = evaluate(qe, FakeLLM(writer), questions=4)
    assert len(result.questions) == 4
    assert [bool(q.persona) for q in result.questions] == [True, True, False, False]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\xef\xbb\xbfWho leads?\n# a comment\n\nWhat changed?\n", ["Who leads?", "What changed?"]),  # BOM dropped
        ("\ufeffWho leads?\r\nWhat changed?".encode("utf-16"), ["Who leads?", "What changed?"]),  # as documents
        (b"\x00\x01\x02PK binary", "looks like a binary file (it contains NUL bytes at offset 0)"),
        (b"Who?\n\xe9t\xe9\n", "questions.txt is not valid UTF-8 (byte 0xe9 at offset 5)"),  # Latin-1
        (b"\n# only a comment\n", "holds no questions"),
    ],
)
def test_a_questions_file_is_read_as_text_or_refused_by_name(tmp_path, data, expected):
    from tiny_graphrag.evaluation.questions import read_questions

    path = tmp_path / "questions.txt"
    path.write_bytes(data)
    if isinstance(expected, list):
        assert [q.text for q in read_questions(path)] == expected
    else:  # the old reader asked a binary file's "lines" as questions, and kept a UTF-8 BOM in the first
        with pytest.raises(InputError, match=re.escape(expected)):
            read_questions(path)
