"""The answer-quality metric of bench/answers.py: SQuAD v1.1 normalization, exact match, token F1.

Expected values are worked out by hand from the official SQuAD v1.1 evaluation script's steps
(lowercase -> drop punctuation -> drop the words a/an/the -> collapse whitespace; F1 over the
multiset of tokens), not taken from running this code.
"""

from __future__ import annotations

import pytest

from bench.answers import abstained, exact_match, extract_answer, normalize_answer, paired, summarize, token_f1


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Quick, Brown Fox!", "quick brown fox"),
        ("An apple a day", "apple day"),
        ("theater", "theater"),  # "the" inside a word stays
        ("the-end", "theend"),  # punctuation goes first, so no article is left to remove
        ("U.S.A.", "usa"),
        ("1,000", "1000"),
        ("  Paris \n\t France ", "paris france"),
        ("A", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match():
    assert exact_match("the Eiffel Tower", "Eiffel Tower.") == 1.0
    assert exact_match("1,000", "1000") == 1.0
    assert exact_match("Eiffel", "Eiffel Tower") == 0.0


@pytest.mark.parametrize(
    "prediction, gold, expected",
    [
        ("Barack Obama", "Obama", 2 / 3),  # P 1/2, R 1
        ("the cat sat on the mat", "a cat on a mat", 6 / 7),  # [cat sat on mat] vs [cat on mat]: P 3/4, R 1
        ("new york new york", "new york", 2 / 3),  # repeated tokens count once per gold occurrence: P 2/4, R 1
        ("Obama", "Barack Obama", 2 / 3),  # P 1, R 1/2
        ("London", "Paris", 0.0),
        ("", "Paris", 0.0),
        ("the", "a", 0.0),  # both normalize to nothing: v1.1 gives 0
        ("Paris, France", "paris france", 1.0),
    ],
)
def test_token_f1(prediction, gold, expected):
    assert token_f1(prediction, gold) == pytest.approx(expected)


def test_extract_answer_takes_the_first_line_without_citations():
    assert extract_answer("Paris [Data: Sources (3, 7)]\nBecause the source says so.") == "Paris"
    assert extract_answer("Answer: Latin [Data: Sources (1, +more)]") == "Latin"
    assert extract_answer("[Data: Sources (1)]\n\nLatin") == "Latin"
    assert extract_answer("") == ""


def test_abstained():
    assert abstained("The context does not say.")
    assert abstained("The data does not contain the answer")
    assert not abstained("Paris")


def _rec(**modes):
    return {
        "gold_titles": ["a", "b"],
        "modes": {m: {"em": em, "f1": f1, "abstained": False, "context_tokens": 10} for m, (em, f1) in modes.items()},
    }


def test_paired_difference_and_summary():
    assert paired([1, 0, 1, 1], [0, 0, 1, 0])["mean"] == 50.0
    records = [
        _rec(naive=(1, 1), closed_book=(0, 0.5)),
        _rec(naive=(0, 0.5), closed_book=(0, 0)),
        _rec(naive=(1, 1), closed_book=(1, 1)),
    ]
    out = summarize(records, ["closed_book", "naive"])
    assert out["modes"]["naive"]["em"]["mean"] == pytest.approx(66.7)
    assert out["modes"]["closed_book"]["f1"]["mean"] == 50.0
    d = out["paired"]["naive-closed_book"]
    assert d["em"]["mean"] == pytest.approx(33.3) and d["f1"]["mean"] == pytest.approx(33.3)
    lo, hi = d["em"]["ci95"]
    assert lo <= d["em"]["mean"] <= hi


def test_map_step_summary_counts_batches_by_relevance():
    from bench.answers import map_step_summary

    def glob(batches, kept=1):
        return {
            "global": {"map_batches": batches, "points_in_reduce": kept, "abstained": False, "invalid_map_answers": 0}
        }

    records = [
        {
            "modes": glob([{"relevant_reports": [3], "scores": [80]}, {"relevant_reports": [], "scores": [0]}]),
            "map_probe": {"relevant": {"points": [{"score": 90}]}, "irrelevant": {"points": [{"score": 0}]}},
        },
        {
            "modes": glob([{"relevant_reports": [5], "scores": [0, 0]}], kept=0),
            "map_probe": {"relevant": {"points": [{"score": 0}]}, "irrelevant": {"points": [{"score": 40}]}},
        },
    ]
    s = map_step_summary(records)
    assert (s["batches_with_a_relevant_report"], s["of_those_with_a_point_scored_above_0"]) == (2, 1)
    assert (s["batches_without_a_relevant_report"], s["of_those_with_a_point_scored_above_0_"]) == (1, 0)
    assert s["reduce_skipped_every_point_0"] == 1
    p = s["probe"]
    assert (p["relevant_batches"], p["relevant_batches_with_a_point_above_0"]) == (2, 1)
    assert (p["irrelevant_batches"], p["irrelevant_batches_with_a_point_above_0"]) == (2, 1)


def test_article_qa_scores_the_best_gold_variant_and_pairs_the_variants():
    from bench.article_qa import score, summarize

    assert score("Harvard Law School [Data: Sources (1)]", ["Harvard Law School", "Harvard"]) == {
        "em": 1.0,
        "f1": 1.0,
        "contains": 1.0,
    }
    assert score("He went to Harvard.", ["Harvard Law School", "Harvard"]) == {"em": 0.0, "f1": 0.4, "contains": 1.0}
    assert score("Chicago", ["Harvard Law School", "Harvard"]) == {"em": 0.0, "f1": 0.0, "contains": 0.0}
    records = [
        {"variants": {"naive": score(a, ["x y"]), "local": score(b, ["x y"])}}
        for a, b in (("x y", "x"), ("z", "x y"), ("x y", "x y"))
    ]
    s = summarize(records, ["naive", "local"])
    assert s["n"] == 3 and s["variants"]["naive"]["em"]["mean"] == 66.7
    assert s["paired"]["local - naive"]["contains"]["mean"] == 0.0 and list(s["paired"]) == ["local - naive"]
