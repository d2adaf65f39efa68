"""finetune.data (formats, conversion, bad lines) and finetune.score (P/R/F1, intervals)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tiny_graphrag.errors import InputError
from tiny_graphrag.finetune.data import (
    Example,
    Relation,
    Span,
    from_friendly,
    from_library,
    read_examples,
    to_friendly,
    to_gliner,
    to_glirel,
)
from tiny_graphrag.finetune.score import entity_items, prf, score, score_entities, score_relations

FRIENDLY = {
    "text": "Barack Obama studied at Harvard Law School, in Cambridge.",
    "entities": [
        {"start": 0, "end": 12, "label": "person"},
        {"start": 24, "end": 42, "label": "organization"},
        {"start": 47, "end": 56, "label": "location"},
    ],
    "relations": [{"head": 0, "tail": 1, "label": "educated at"}, {"head": 1, "tail": 2, "label": "located in"}],
}


def test_friendly_record_becomes_words_with_the_extractors_tokenization():
    ex = from_friendly(FRIENDLY)
    assert ex.tokens[:4] == ("Barack", "Obama", "studied", "at")
    assert ex.tokens[-2:] == ("Cambridge", ".")  # WORD_RE splits the full stop off, as GLiNER does
    assert ex.entities == (Span(0, 1, "person"), Span(4, 6, "organization"), Span(9, 9, "location"))
    assert ex.relations == (Relation(0, 1, "educated at"), Relation(1, 2, "located in"))


def test_round_trip_through_the_libraries_formats():
    ex = from_friendly(FRIENDLY)
    gl = to_gliner(ex)
    assert gl == {
        "tokenized_text": list(ex.tokens),
        "ner": [[0, 1, "person"], [4, 6, "organization"], [9, 9, "location"]],
    }
    assert from_library(gl).entities == ex.entities
    rel = to_glirel(ex)
    # GLiREL's own training format: ner spans with text, relations keyed by span positions (inclusive)
    assert rel["ner"][1] == [4, 6, "organization", "Harvard Law School"]
    assert rel["relations"][0]["head"]["position"] == [0, 1] and rel["relations"][0]["tail"]["position"] == [4, 6]
    assert rel["relations"][0]["relation_text"] == "educated at"
    back = from_library(rel)
    assert (back.tokens, back.entities, back.relations) == (ex.tokens, ex.entities, ex.relations)
    again = from_friendly(to_friendly(ex))
    assert (again.tokens, again.entities, again.relations) == (ex.tokens, ex.entities, ex.relations)


def test_spans_that_cut_a_word_cover_the_whole_word():
    ex = from_friendly({"text": "Obamas went home", "entities": [{"start": 0, "end": 5, "label": "person"}]})
    assert ex.entities == (Span(0, 0, "person"),)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("{not json", "not valid JSON"),
        ('{"words": ["a"]}', "'text'"),
        ('{"text": "", "entities": []}', "'text'"),
        ('{"text": "ab cd", "entities": [{"start": 3, "end": 99, "label": "x"}]}', "'entities[0]'"),
        ('{"text": "ab cd", "entities": [{"start": "0", "end": 2, "label": "x"}]}', "'entities[0].start'"),
        ('{"text": "ab cd", "entities": [{"start": 0, "end": 2}]}', "'entities[0].label'"),
        (
            '{"text": "ab cd", "entities": [{"start": 0, "end": 2, "label": "x"}], "relations": [{"head": 0, "tail": 3, "label": "r"}]}',
            "'relations[0].tail'",
        ),
        ('{"text": "ab", "entities": {"start": 0}}', "'entities'"),
        ('{"tokenized_text": ["a", "b"], "ner": [[0, 5, "x"]]}', "'ner[0]'"),
        (
            '{"tokenized_text": ["a", "b"], "ner": [[0, 0, "x"], [1, 1, "y"]], "relations": [{"head": {"position": [0, 1]}, "tail": {"position": [1, 1]}, "relation_text": "r"}]}',
            "'relations[0].head.position'",
        ),
        ('{"tokenized_text": ["a", "b"], "ner": [], "relations": [{"head": 0}]}', "'relations[0]'"),
    ],
)
def test_a_bad_line_names_file_line_and_field(tmp_path, line, field):
    f = tmp_path / "train.jsonl"
    f.write_text(json.dumps(FRIENDLY) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_examples(f)
    assert f"{f}:3" in str(err.value) and field in str(err.value)


def test_missing_and_empty_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_examples(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no examples"):
        read_examples(tmp_path / "empty.jsonl")
    # a folder was said not to exist; it is named a folder, with the file formats wanted
    with pytest.raises(InputError, match=r"is a folder; pass a file of examples instead: JSONL.*tokenized_text"):
        read_examples(tmp_path)


def test_a_file_that_is_not_utf8_is_an_input_error_and_lines_count_as_a_text_file_reads_them(tmp_path):
    good = json.dumps({"text": "Ann Lee works at Acme.", "entities": [{"start": 0, "end": 7, "label": "person"}]})
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(good.encode() + b"\n" + '{"text": "Zoë"}'.encode("latin-1") + b"\n")
    with pytest.raises(InputError, match=r"latin1\.jsonl is not valid UTF-8 \(byte 0xeb at offset \d+\).*iconv"):
        read_examples(latin1)  # was a UnicodeDecodeError traceback
    crlf = tmp_path / "crlf.jsonl"  # Windows line ends and a BOM: the bad line is still named line 3
    crlf.write_bytes(b"\xef\xbb\xbf" + good.encode() + b"\r\n\r\n{not json}\r\n")
    with pytest.raises(InputError, match=r"crlf\.jsonl:3: not valid JSON"):
        read_examples(crlf)
    crlf.write_bytes(b"\xef\xbb\xbf" + good.encode() + b"\r\n" + good.encode() + b"\r")
    assert len(read_examples(crlf)) == 2


# ---- scoring ------------------------------------------------------------------------------
def _ex(ents, rels=()):
    return Example(tokens=tuple("w" * 1 for _ in range(10)), entities=tuple(ents), relations=tuple(rels))


def test_scores_match_a_hand_computed_reference():
    gold = [
        _ex([Span(0, 1, "person"), Span(3, 3, "location")], [Relation(0, 1, "born in")]),
        _ex([Span(2, 4, "organization")]),
    ]
    pred = [
        # person exact, location with the wrong type; the relation's tail span is right, so it counts
        _ex([Span(0, 1, "person"), Span(3, 3, "organization")], [Relation(0, 1, "born in")]),
        # organization with a wrong span, and one extra entity
        _ex([Span(2, 3, "organization"), Span(6, 6, "person")]),
    ]
    e = score_entities(pred, gold)
    # 1 correct of 4 predicted and 3 gold: P 1/4, R 1/3, F1 2/7
    assert (e.tp, e.predicted, e.gold) == (1, 4, 3)
    assert e.precision == pytest.approx(0.25) and e.recall == pytest.approx(1 / 3) and e.f1 == pytest.approx(2 / 7)
    r = score_relations(pred, gold)
    assert (r.tp, r.predicted, r.gold, r.f1) == (1, 1, 1, 1.0)
    wrong_label = [_ex(gold[0].entities, [Relation(0, 1, "lives in")]), gold[1]]
    assert score_relations(wrong_label, gold).f1 == 0.0
    reversed_ = [_ex(gold[0].entities, [Relation(1, 0, "born in")]), gold[1]]
    assert score_relations(reversed_, gold).f1 == 0.0  # head and tail are ordered


def test_micro_scores_agree_with_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    gold, pred = [], []
    for _ in range(40):
        gold.append(_ex([Span(i, i, "t") for i in range(10) if rng.random() < 0.3]))
        pred.append(_ex([Span(i, i, "t") for i in range(10) if rng.random() < 0.4]))
    ours = score_entities(pred, gold)
    # one binary decision per (example, candidate item): micro P/R/F1 over the items is sklearn's binary score
    y_true = [int((i, i, "t") in entity_items(g)) for g in gold for i in range(10)]
    y_pred = [int((i, i, "t") in entity_items(p)) for p in pred for i in range(10)]
    p, r, f, _ = sk.precision_recall_fscore_support(y_true, y_pred, average="binary", zero_division=0)
    assert (ours.precision, ours.recall, ours.f1) == pytest.approx((p, r, f))


def test_bootstrap_interval_brackets_the_score_and_is_reproducible():
    pred = [{1, 2}, {3}, {4, 5, 6}, set(), {7}] * 8
    gold = [{1}, {3, 9}, {4, 5}, {8}, {7}] * 8
    a, b = score(pred, gold), score(pred, gold)
    assert a == b
    assert a.f1_low <= a.f1 <= a.f1_high and a.f1_low < a.f1_high
    assert score([set()], [set()]).f1 == 0.0 and prf(0, 0, 0) == (0.0, 0.0, 0.0)
