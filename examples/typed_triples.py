"""Print an index's relations by label and, for the most frequent labels, its best-scored typed
triple with the sentence it came from.

python examples/typed_triples.py graphs/obama [--show 3]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from tiny_graphrag.index.store import IndexStore

UNTYPED = "related to"  # the spaCy extractor's co-occurrence links


def sentence_around(text: str, start: int, end: int, reach: int = 200) -> str:
    """The sentence holding text[start:end], cut at a word with "..." where it runs on more than
    `reach` characters before or after the span (a sentence ends at ". ")."""
    dot = text.rfind(". ", 0, start)
    left = dot + 2 if dot >= 0 else 0
    dot = text.find(". ", end)
    right = dot + 1 if dot >= 0 else len(text)
    before = after = ""
    if start - left > reach:
        space = text.find(" ", start - reach, start)
        left, before = (space + 1 if space >= 0 else start - reach), "..."
    if right - end > reach:
        space = text.rfind(" ", end, end + reach)
        right, after = (space if space >= 0 else end + reach), "..."
    return before + " ".join(text[left:right].split()) + after


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("index")
    p.add_argument("--show", type=int, default=3, help="labels to show a triple of, with its source")
    args = p.parse_args()
    store = IndexStore.open(args.index)
    graph = store.graph()
    labels = Counter(k for _, _, k in graph.edges(keys=True))
    print(f"relations by label ({sum(labels.values())} in all):")
    for label, n in labels.most_common():
        print(f"  {label}: {n}")
    best: dict[str, tuple] = {}  # one triple per label: a label's top triple says more than a label's three
    for u, v, k, d in graph.edges(keys=True, data=True):
        if k != UNTYPED and (k not in best or d.get("score", 0.0) > best[k][2].get("score", 0.0)):
            best[k] = (u, v, d)
    for label, _n in [x for x in labels.most_common() if x[0] in best][: args.show]:
        u, v, d = best[label]
        doc_id, _chunk, start, end = d["provenance"][0]
        doc = store.document(doc_id)
        text = doc.text
        head, tail = graph.nodes[u].get("name", u), graph.nodes[v].get("name", v)
        print(f"\n({head}) -[{label}, score {d.get('score', 0):.2f}]-> ({tail})")
        print(f'  {Path(doc.source).name} chars {start}-{end}: "{sentence_around(text, start, end)}"')
    store.close()


if __name__ == "__main__":
    main()
