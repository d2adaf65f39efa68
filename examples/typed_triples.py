"""Print an index's relations by label and a few typed triples with the sentence they came from.

python examples/typed_triples.py graphs/obama [--show 5]
"""

from __future__ import annotations

import argparse
from collections import Counter

from tiny_graphrag.index.store import IndexStore

UNTYPED = "related to"  # the spaCy extractor's co-occurrence links


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("index")
    p.add_argument("--show", type=int, default=5, help="typed triples to print, with their source")
    args = p.parse_args()
    store = IndexStore.open(args.index)
    graph = store.graph()
    labels = Counter(k for _, _, k in graph.edges(keys=True))
    print(f"relations by label ({sum(labels.values())} in all):")
    for label, n in labels.most_common():
        print(f"  {label}: {n}")
    typed = [(u, v, d) for u, v, k, d in graph.edges(keys=True, data=True) if k != UNTYPED]
    typed.sort(key=lambda e: -e[2].get("score", 0.0))
    texts: dict[str, str] = {}
    for u, v, d in typed[: args.show]:
        doc_id, _chunk, start, end = d["provenance"][0]
        if doc_id not in texts:
            texts[doc_id] = store.document(doc_id).text
        text = texts[doc_id]
        left = max(text.rfind(". ", 0, start) + 2, start - 200, 0)
        right = min([i for i in (text.find(". ", end), start + 300) if i >= 0] + [len(text)])
        head, tail = graph.nodes[u].get("name", u), graph.nodes[v].get("name", v)
        print(f"\n({head}) -[{d['label']}, score {d.get('score', 0):.2f}]-> ({tail})")
        print(f'  source {doc_id}: "{" ".join(text[left : right + 1].split())}"')
    store.close()


if __name__ == "__main__":
    main()
