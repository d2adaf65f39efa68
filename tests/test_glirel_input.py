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
