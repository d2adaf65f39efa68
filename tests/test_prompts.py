"""The search prompts: what a small local model is told, and that the data cannot break a template."""

from __future__ import annotations

import json

import pytest

from tiny_graphrag.search.prompts import (
    LOCAL_CITATIONS,
    NAIVE_CITATIONS,
    NO_DATA_ANSWER,
    NOT_IN_CONTEXT,
    answer_messages,
    fill,
    map_messages,
    map_schema,
    reduce_messages,
)

CONTEXT = "-----Sources-----\nid|text\n7|Lyon is a city in France. {not a placeholder}"


def _user(messages):
    return next(m["content"] for m in messages if m["role"] == "user")


def test_answer_prompt_holds_the_data_question_and_citation_form():
    user = _user(answer_messages(CONTEXT, "Where is Lyon?", NAIVE_CITATIONS))
    assert CONTEXT in user  # braces inside the data are left alone
    assert "Question: Where is Lyon?" in user
    assert NAIVE_CITATIONS in user
    assert "{" + "query}" not in user and "{" + "citations}" not in user


def test_answer_prompt_asks_for_the_answer_first_then_citations_and_a_plain_no():
    user = _user(answer_messages(CONTEXT, "Where is Lyon?", LOCAL_CITATIONS))
    first, then = user.index("Answer in a few words"), user.index("then cite")
    assert first < then
    assert f"write: {NOT_IN_CONTEXT}" in user
    # Data, then the rules, then the question and the answer slot: small models follow what they
    # read last, and "Answer:" at the end is what kept a 0.5B model's answers to a few words.
    assert user.index(CONTEXT) < first < user.index("Question: Where is Lyon?")
    assert user.rstrip().endswith("Answer:")


def test_answer_prompt_is_short():
    user = _user(answer_messages("", "q", NAIVE_CITATIONS))
    system = answer_messages("", "q", NAIVE_CITATIONS)[0]["content"]
    assert len((system + user).split()) < 110


def test_local_asks_for_the_same_citation_form_as_naive():
    # Changed on purpose (issue 11): naming four id kinds made a 0.5B reader answer with ids only.
    assert LOCAL_CITATIONS == NAIVE_CITATIONS == "[Data: Sources (ids)]"


def test_no_data_answer_says_the_same_plain_phrase():
    assert NO_DATA_ANSWER.startswith(NOT_IN_CONTEXT.rstrip("."))
    assert "do not know" not in NO_DATA_ANSWER.lower()


def test_reduce_prompt_answers_first_then_summarizes_the_points():
    # Changed on purpose (issue 11): the reduce no longer asks for "a few words": a question about
    # main themes needs the analysts' points summarized, a factoid one still gets its answer first.
    user = _user(reduce_messages("(1) Lyon is in France [Data: Reports (3)] score 90", "Where is Lyon?"))
    assert "Question: Where is Lyon?" in user and user.rstrip().endswith("Answer:")
    first, then = user.index("Start with the answer itself"), user.index("main points")
    assert first < then < user.index("[Data: Reports (ids)]", then)
    # The plain no only when no point is relevant, never "I do not know".
    assert f"If no key point is relevant to the question, write: {NOT_IN_CONTEXT}" in user
    assert "do not know" not in user.lower()


def test_map_prompt_and_schema():
    user = _user(map_messages("-----Findings-----\nid|report|finding\n3.1|Lyon|{x}", "Where is Lyon?"))
    assert '{"points": [{"finding": "id", "score": 0-100}]}' in user  # JSON braces are not placeholders
    assert "3.1|Lyon|{x}" in user
    # The question is read before the findings, and named again in the instructions.
    assert user.startswith("Question: Where is Lyon?") and user.count("Where is Lyon?") == 2
    assert "score: 0 when the finding is not about what the question asks" in user
    ids = ["1.1", "1.2", "2.1", "3.1", "3.2"]
    schema = map_schema(4, ids)
    assert schema["properties"]["points"]["maxItems"] == 4
    assert schema["properties"]["points"]["minItems"] == 1
    assert schema["properties"]["points"]["items"]["properties"]["finding"] == {"enum": ids}  # only shown findings
    assert map_schema(5, ids[:2])["properties"]["points"]["maxItems"] == 2  # nor more than there are findings
    assert schema["properties"]["points"]["items"]["properties"]["score"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 100,
    }


def test_fill_replaces_in_one_pass():
    assert fill("{a} {b}", a="{b}", b="x") == "{b} x"
    assert fill("{missing}") == "{missing}"


def test_map_answer_parsing_keeps_each_point_once():
    from tiny_graphrag.search.global_search import INVALID_MAP_ANSWER, parse_map_answer

    text = (
        '{"points": [{"description": "Lyon is in France [Data: Reports (3)]", "score": 90}, '
        '{"description": "Lyon is in France [Data: Reports (3)]", "score": 80}, '
        '{"description": "Paris is the capital", "score": 140}]}'
    )
    points, valid = parse_map_answer(text, 2)
    assert valid and [(p.description[:4], p.score, p.batch) for p in points] == [("Lyon", 90, 2), ("Pari", 100, 2)]
    points, valid = parse_map_answer("not json", 0)
    assert not valid and points[0].description == INVALID_MAP_ANSWER and points[0].score == 0


def test_chosen_findings_become_points_in_their_own_words():
    """A map model names findings by id; each point is that finding's text citing its report, an
    id the batch did not show is no point, and a finding named twice counts once."""
    from tiny_graphrag.search.global_search import INVALID_MAP_ANSWER, parse_map_answer

    findings = (("3.1", 3, "Lyon is a city in France."), ("3.2", 3, "It lies on the Rhone."), ("7.1", 7, "Paris."))
    text = json.dumps(
        {
            "points": [
                {"finding": "3.2", "score": 80},
                {"finding": "9.9", "score": 100},
                {"finding": "3.2", "score": 70},
                {"finding": "7.1", "score": 0},
            ]
        }
    )
    points, valid = parse_map_answer(text, 1, findings)
    assert valid and [(p.description, p.score, p.batch) for p in points] == [
        ("It lies on the Rhone. [Data: Reports (3)]", 80, 1),
        ("Paris. [Data: Reports (7)]", 0, 1),
    ]
    points, valid = parse_map_answer(json.dumps({"points": [{"finding": "9.9", "score": 90}]}), 0, findings)
    assert not valid and points[0].description == INVALID_MAP_ANSWER


@pytest.mark.parametrize("cut", [0, 1, 25, 50])
def test_a_cut_off_map_answer_keeps_its_complete_points(cut):
    from tiny_graphrag.search.global_search import parse_map_answer

    whole = (
        '{"points": [{"description": "Scrooge becomes generous [Data: Reports (2)]", "score": 90}, '
        '{"description": "Marley warns him", "score": 70}, {"description": "Tiny Tim does not die", "score": 60}]}'
    )
    third = whole.index('{"description": "Tiny')
    points, valid = parse_map_answer(whole[: third + cut], 1)  # cut inside (or just before) the third point
    assert valid and [(p.description, p.score) for p in points] == [
        ("Scrooge becomes generous [Data: Reports (2)]", 90),
        ("Marley warns him", 70),
    ]
    points, valid = parse_map_answer('{"points": [{"description": "Scrooge bec', 1)  # nothing whole: invalid
    assert not valid and points[0].score == 0


def test_the_longest_map_answer_fits_its_output_budget():
    """Chosen by id, a map answer is short: max_points points with the longest ids and scores fit
    GlobalConfig's map_max_tokens by the conservative estimate (a cut-off answer would lose its
    last point)."""
    from tiny_graphrag.search.config import GlobalConfig
    from tiny_graphrag.search.tokens import approximate_tokens

    config = GlobalConfig()
    longest = json.dumps({"points": [{"finding": "99999.99", "score": 100}] * config.max_points})  # 100k reports
    assert approximate_tokens(longest) <= config.map_max_tokens
