"""What GLiREL is given: labels in prompts no longer than it was trained with, typed markers."""

from __future__ import annotations

from types import SimpleNamespace

from tiny_graphrag.extract.glirel_input import glirel_relations, label_chunks, mark_types


class RecordingGlirel:
    """Stands in for GLiREL: records each call, and finds the first label between the first two spans."""

    def __init__(self, **config: object) -> None:
        self.config = SimpleNamespace(**config)
        self.calls: list[tuple[list[list[str]], list[str], list]] = []

    def batch_predict_relations(self, words, labels, threshold, ner, top_k):
        self.calls.append((words, list(labels), ner))
        found = []
        for spans in ner:
            (h0, h1, *_), (t0, t1, *_) = spans[0], spans[1]
            found.append([{"head_pos": [h0, h1 + 1], "tail_pos": [t0, t1 + 1], "label": labels[0], "score": 0.9}])
        return found


WORDS = ["Obama", "studied", "at", "Harvard", "Law", "School", "."]
SPANS = [(0, 0, "person"), (3, 5, "organization")]


def test_labels_go_in_even_prompts_no_longer_than_the_model_was_trained_with():
    labels = [f"label {i}" for i in range(84)]
    assert [len(c) for c in label_chunks(labels, 12)] == [12] * 7
    assert [len(c) for c in label_chunks(labels[:13], 12)] == [7, 6]
    model = RecordingGlirel(prompt_labels=12)
    found = glirel_relations(model, [WORDS], [SPANS], labels, 0.5)
    assert [len(labels_) for _, labels_, _ in model.calls] == [12] * 7  # was one prompt of all 84
    assert sorted(lab for _, lab, _ in model.calls for lab in lab) == sorted(labels)
    assert len(found[0]) == 7 and {(h, t) for h, t, _, _ in found[0]} == {((0, 0), (3, 5))}
    # a model without the field (published GLiREL) gets every label in one prompt, as before
    model = RecordingGlirel()
    glirel_relations(model, [WORDS], [SPANS], labels, 0.5)
    assert len(model.calls) == 1


def test_typed_markers_put_each_type_before_its_mention_and_map_back():
    words, where = mark_types(WORDS, SPANS)
    assert words == ["person", "Obama", "studied", "at", "organization", "Harvard", "Law", "School", "."]
    assert where == {(0, 0): (0, 1), (3, 5): (4, 7)}  # each span starts at its marker
    model = RecordingGlirel(typed_markers=True, prompt_labels=12)
    found = glirel_relations(model, [WORDS], [SPANS], ["educated at"], 0.5)
    sent, _, ner = model.calls[0]
    assert sent[0] == words and [s[:3] for s in ner[0]] == [[0, 1, "person"], [4, 7, "organization"]]
    assert found == [[((0, 0), (3, 5), "educated at", 0.9)]]  # in the caller's words again
    # a text with fewer than two distinct spans is not sent
    assert glirel_relations(model, [WORDS], [[SPANS[0], SPANS[0]]], ["x"], 0.5) == [[]]


class BothWays(RecordingGlirel):
    """Scores every label both ways between the first two spans: `scores[label]` = (forward, backward)."""

    def __init__(self, scores: dict[str, tuple[float, float]], **config: object) -> None:
        super().__init__(**config)
        self.scores = scores
        self.thresholds: list[float] = []

    def batch_predict_relations(self, words, labels, threshold, ner, top_k):
        self.thresholds.append(threshold)
        (h0, h1, *_), (t0, t1, *_) = ner[0][0], ner[0][1]
        a, b = [h0, h1 + 1], [t0, t1 + 1]
        found = []
        for label in labels:
            fwd, back = self.scores[label]
            found += [{"head_pos": a, "tail_pos": b, "label": label, "score": fwd}] * (fwd >= threshold)
            found += [{"head_pos": b, "tail_pos": a, "label": label, "score": back}] * (back >= threshold)
        return [found]


PEOPLE = [(0, 0, "person"), (3, 3, "person")]


def test_a_directed_label_scored_alike_both_ways_is_dropped_and_one_clearly_one_way_kept():
    scores = {"child": (0.52, 0.52), "father": (0.9, 0.45), "spouse": (0.7, 0.68), "mother": (0.6, 0.3)}
    labels = sorted(scores)
    model = BothWays(scores, directed_labels=["child", "father", "mother"], direction_margin=0.15)
    (found,) = glirel_relations(model, [WORDS], [PEOPLE], labels, 0.5)
    a, b = (0, 0), (3, 3)
    # child: either way within 0.15, both dropped; father: its reverse (0.45) is asked for (threshold less the
    # margin), within 0.15 of 0.9 it is not, so the forward one stays; spouse is not directed: both kept
    assert sorted(found) == [
        (a, b, "father", 0.9),
        (a, b, "mother", 0.6),
        (a, b, "spouse", 0.7),
        (b, a, "spouse", 0.68),
    ]
    assert model.thresholds == [0.5 - 0.15]
    # a reverse the schema rules out says nothing of the direction: child from b to a not allowed, a to b is kept
    allows = lambda label, head, tail: not (label == "child" and head == "other")  # noqa: E731
    typed = [(0, 0, "person"), (3, 3, "other")]
    (found,) = glirel_relations(
        BothWays(scores, directed_labels=["child"], direction_margin=0.15), [WORDS], [typed], ["child"], 0.5, allows
    )
    assert found == [(a, b, "child", 0.52)]
    # without the fields (a published GLiREL, or a starter trained before them) nothing is dropped or asked lower
    plain = BothWays(scores)
    (found,) = glirel_relations(plain, [WORDS], [PEOPLE], labels, 0.5)
    assert len(found) == 6 and plain.thresholds == [0.5]


def test_directed_labels_come_from_the_training_pairs_and_the_base_keeps_its_own(tmp_path):
    from tiny_graphrag.finetune.data import Example, Relation, Span
    from tiny_graphrag.finetune.glirel import directed_labels

    people = (Span(0, 0, "person"), Span(3, 3, "person"))
    both_ways = Example(tuple(WORDS), people, (Relation(0, 1, "spouse"), Relation(1, 0, "spouse")))
    one_way = Example(tuple(WORDS), people, (Relation(0, 1, "child"), Relation(0, 1, "spouse")))
    # spouse stands reversed in 2 of its 3 triples: not directed; child never does
    assert directed_labels([both_ways, one_way], tmp_path) == ["child"]
    # a base's own record counts for the labels this data lacks, not for those it has
    (tmp_path / "glirel_config.json").write_text('{"directed_labels": ["father", "spouse"]}', encoding="utf-8")
    assert directed_labels([both_ways, one_way], tmp_path) == ["child", "father"]
    # an unreadable config is not this function's to report (loading the base next refuses it with the fix)
    (tmp_path / "glirel_config.json").write_text("{not json", encoding="utf-8")
    assert directed_labels([both_ways, one_way], tmp_path) == ["child"]
