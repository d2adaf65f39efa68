"""What GLiREL reads: its labels in prompts no longer than those it was trained with, and, for a
model trained with them, each mention's entity type written before it (typed markers).

GLiREL writes its labels before the text. Its encoder's positions are absolute: a model trained with prompts of a dozen
labels and asked with 84 would read the text some 250 positions later than it ever saw it, so the labels go in chunks of
at most `prompt_labels` (a field of its config), each a pass. Typed markers (Zhou & Chen 2021): the type word goes
before each mention and inside its span, so the pair's representation starts at its type; GLiREL alone never sees the
types. A triple of a directed label (`directed_labels`: child, not spouse) whose reverse scores within
`direction_margin` of it is dropped: the model does not know which way it runs (bench/RESULTS.md, "A direction check")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Span = tuple[int, int, str]  # first word, last word (inclusive), entity type
Found = tuple[tuple[int, int], tuple[int, int], str, float]  # head (first, last), tail, label, score


def mark_types(words: Sequence[str], spans: Sequence[Span]) -> tuple[list[str], dict[tuple[int, int], tuple[int, int]]]:
    """The words with each span's type before it (one per start word: the longest span's), and
    where each (first, last) span is in them, its marker included."""
    types: dict[int, str] = {}
    for first, _last, label in sorted(spans, key=lambda s: (s[0], -s[1])):
        types.setdefault(first, label)
    out, at = [], []
    for i, word in enumerate(words):
        if i in types:
            out.append(types[i])
        at.append(len(out))
        out.append(word)
    return out, {(f, t): (at[f] - 1, at[t]) for f, t, _ in spans}


def label_chunks(labels: Sequence[str], size: int) -> list[list[str]]:
    """The labels in as few prompts of at most `size` as can be, of even sizes (13 labels with 12:
    7 and 6, not 12 and 1)."""
    if not labels:
        return []
    n = -(-len(labels) // max(1, size))
    k = -(-len(labels) // n)
    return [list(labels[i : i + k]) for i in range(0, len(labels), k)]


def glirel_relations(
    model: Any,
    words: Sequence[Sequence[str]],
    spans: Sequence[Sequence[Span]],
    labels: Sequence[str],
    threshold: float,
    allows: Callable[[str, str, str], bool] | None = None,
) -> list[list[Found]]:
    """Every (head, tail, label, score) GLiREL scores at least `threshold` between the distinct spans of each text
    (spans in `words`' positions; a text with fewer than two spans gets none) that `allows(label, head type, tail
    type)`: a reverse the schema rules out does not make a triple's direction unsure."""
    typed = bool(getattr(model.config, "typed_markers", False))
    size = int(getattr(model.config, "prompt_labels", 0) or len(labels))
    directed = set(getattr(model.config, "directed_labels", None) or ())
    margin = float(getattr(model.config, "direction_margin", 0) or 0) if directed & set(labels) else 0.0
    todo, inputs = [], []
    for i, (ws, ss) in enumerate(zip(words, spans)):
        ss = list({(f, t): (f, t, label) for f, t, label in ss}.values())  # one per span: GLiREL keys by span
        if len(ss) < 2:
            continue
        shown, where = mark_types(ws, ss) if typed else (list(ws), {(f, t): (f, t) for f, t, _ in ss})
        ner = [[*where[(f, t)], label, " ".join(ws[f : t + 1])] for f, t, label in sorted(ss)]
        todo.append(i)
        inputs.append((shown, ner, {v: k for k, v in where.items()}, {(f, t): label for f, t, label in ss}))
    out: list[list[Found]] = [[] for _ in words]
    for chunk in label_chunks(labels, size) if todo else []:
        raw = model.batch_predict_relations(
            [x[0] for x in inputs], chunk, threshold=threshold - margin, ner=[x[1] for x in inputs], top_k=-1
        )
        for i, (_, _, back, type_of), rels in zip(todo, inputs, raw):
            for r in rels:
                # GLiREL reports [first word, last word + 1]
                head = back.get((r["head_pos"][0], r["head_pos"][1] - 1))
                tail = back.get((r["tail_pos"][0], r["tail_pos"][1] - 1))
                if head is None or tail is None or head == tail:
                    continue
                if allows is None or allows(str(r["label"]), type_of[head], type_of[tail]):
                    out[i].append((head, tail, str(r["label"]), float(r["score"])))
    for found in out if margin else ():
        score = {(h, t, label): s for h, t, label, s in found}
        found[:] = [
            (h, t, label, s)
            for h, t, label, s in found
            if s >= threshold and not (label in directed and score.get((t, h, label), -1.0) >= s - margin)
        ]
    return out
