"""A small hand-made index for the search tests (imported by tests/test_search_*.py; holds no tests).

Six short documents, a hand-made typed graph whose provenance points at real spans, two community
levels with hand-written reports (which cite entities and sources, as generated reports do),
and vectors from the real all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import networkx as nx

from tiny_graphrag.index.graph import assign_hids, normalize_name
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.indexing.chunking import count_tokens
from tiny_graphrag.records import Chunk, Community, Document, Finding, Report, content_id

DOCS = {
    "computing": (
        "Ada Lovelace worked with Charles Babbage on the Analytical Engine. "
        "Babbage designed the Analytical Engine in London."
    ),
    "turing": (
        "Alan Turing studied at King's College in Cambridge. "
        "Turing later worked at Bletchley Park during the Second World War."
    ),
    "bletchley": (
        "Bletchley Park is located in Milton Keynes. "
        "The codebreakers at Bletchley Park included Joan Clarke, who worked closely with Turing."
    ),
    "hopper": (
        "Grace Hopper served in the United States Navy. Hopper developed the A-0 compiler, one of the first compilers."
    ),
    "paris": (
        "The Eiffel Tower is located in Paris. The company of Gustave Eiffel built the tower for the 1889 World's Fair."
    ),
    "plants": "Photosynthesis converts light energy into chemical energy in green plants.",
}

# name -> (type, aliases)
ENTITIES = {
    "Ada Lovelace": ("Person", []),
    "Charles Babbage": ("Person", ["Babbage"]),
    "Analytical Engine": ("Product", []),
    "London": ("Location", []),
    "Alan Turing": ("Person", ["Turing"]),
    "King's College": ("Organization", []),
    "Cambridge": ("Location", []),
    "Bletchley Park": ("Organization", []),
    "Milton Keynes": ("Location", []),
    "Joan Clarke": ("Person", []),
    "Grace Hopper": ("Person", ["Hopper"]),
    "United States Navy": ("Organization", []),
    "A-0": ("Product", []),
    "Eiffel Tower": ("Location", []),
    "Paris": ("Location", []),
    "Gustave Eiffel": ("Person", []),
}

RELATIONS = [
    ("Ada Lovelace", "Charles Babbage", "worked with", 2),
    ("Charles Babbage", "Analytical Engine", "designed", 2),
    ("Charles Babbage", "London", "located in", 1),
    ("Alan Turing", "King's College", "educated at", 1),
    ("King's College", "Cambridge", "located in", 1),
    ("Alan Turing", "Bletchley Park", "works for", 2),
    ("Bletchley Park", "Milton Keynes", "located in", 1),
    ("Joan Clarke", "Bletchley Park", "works for", 1),
    ("Joan Clarke", "Alan Turing", "worked with", 1),
    ("Grace Hopper", "United States Navy", "member of", 1),
    ("Grace Hopper", "A-0", "developed", 1),
    ("Eiffel Tower", "Paris", "located in", 1),
    ("Gustave Eiffel", "Eiffel Tower", "built", 1),
]

LEVEL0 = [
    ["Ada Lovelace", "Charles Babbage", "Analytical Engine", "London"],
    ["Alan Turing", "King's College", "Cambridge", "Bletchley Park", "Milton Keynes", "Joan Clarke"],
    ["Grace Hopper", "United States Navy", "A-0"],
    ["Eiffel Tower", "Paris", "Gustave Eiffel"],
]
# Level 1 splits the Turing community in two and carries the others down.
LEVEL1 = [
    LEVEL0[0],
    ["Alan Turing", "King's College", "Cambridge"],
    ["Bletchley Park", "Milton Keynes", "Joan Clarke"],
    LEVEL0[2],
    LEVEL0[3],
]

TITLES = {
    "Ada Lovelace": "Lovelace, Babbage and the Analytical Engine",
    "Alan Turing": "Turing, Cambridge and Bletchley Park",
    "Bletchley Park": "Bletchley Park codebreakers in Milton Keynes",
    "Grace Hopper": "Grace Hopper, the Navy and the A-0 compiler",
    "Eiffel Tower": "The Eiffel Tower in Paris",
}


def _chunks(doc: Document) -> list[Chunk]:
    """One chunk per sentence (two per document), offsets into the document."""
    out = []
    for i, m in enumerate(re.finditer(r"[^.]+(?:\.|$)", doc.text)):
        start = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
        text = doc.text[start : m.end()]
        if text.strip():
            out.append(
                Chunk(content_id("chunk", doc.id, i), doc.id, len(out), text, start, m.end(), count_tokens(text))
            )
    return out


def _graph(docs: list[Document], chunks: list[Chunk]) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()

    def spans(surfaces: list[str]) -> list[tuple[str, str, int, int]]:
        found = []
        for c in chunks:
            for s in surfaces:
                for m in re.finditer(r"\b" + re.escape(s) + r"\b", c.text):
                    found.append((c.doc_id, c.id, c.start + m.start(), c.start + m.end()))
        return sorted(set(found), key=lambda p: (p[1], p[2]))

    for name, (etype, aliases) in ENTITIES.items():
        prov = spans([name] + aliases)
        g.add_node(
            normalize_name(name),
            name=name,
            type=etype,
            type_votes={etype: len(prov)},
            type_conflict=False,
            mentions=len(prov),
            provenance=prov,
            aliases=[name] + aliases,
        )
    for head, tail, label, weight in RELATIONS:
        h, t = normalize_name(head), normalize_name(tail)
        prov = g.nodes[h]["provenance"][:1]
        g.add_edge(h, t, key=label, label=label, score=0.9, weight=weight, provenance=prov * weight)
    assign_hids(g)
    return g


def _communities(g: nx.MultiDiGraph) -> list[Community]:
    out: list[Community] = []
    ids0 = []
    for i, names in enumerate(LEVEL0):
        keys = tuple(normalize_name(n) for n in names)
        ids0.append((f"c0-{i}", set(keys)))
    for level, parts in ((0, LEVEL0), (1, LEVEL1)):
        for i, names in enumerate(parts):
            keys = tuple(normalize_name(n) for n in names)
            edges = tuple(sorted((u, v, k) for u, v, k in g.edges(keys=True) if u in keys and v in keys))
            parent = None
            if level == 1:
                parent = next(cid for cid, members in ids0 if set(keys) <= members)
            out.append(Community(f"c{level}-{i}", level, keys, parent=parent, edges=edges))
    children: dict[str, list[str]] = {}
    for c in out:
        if c.parent:
            children.setdefault(c.parent, []).append(c.id)
    return [Community(c.id, c.level, c.nodes, c.parent, tuple(children.get(c.id, ())), c.edges) for c in out]


def _reports(g: nx.MultiDiGraph, communities: list[Community], sid_of: dict[str, int]) -> list[Report]:
    reports = []
    for c in communities:
        first = g.nodes[c.nodes[0]]
        title = TITLES.get(first["name"], f"Community of {first['name']}")
        names = ", ".join(g.nodes[n]["name"] for n in c.nodes)
        hids = ", ".join(str(g.nodes[n]["hid"]) for n in c.nodes[:3])
        sid = sid_of[first["provenance"][0][1]]
        findings = tuple(
            Finding(
                f"{g.nodes[u]['name']} {k} {g.nodes[v]['name']}",
                f"The data says {g.nodes[u]['name']} {k} {g.nodes[v]['name']}. "
                f"[Data: Relationships ({g.edges[u, v, k]['hid']}); Sources ({sid})]",
            )
            for u, v, k in c.edges[:3]
        )
        reports.append(
            Report(
                c.id,
                c.level,
                title,
                f"This community links {names}. [Data: Entities ({hids})]",
                7.0 - c.level,
                "Central to the documents.",
                findings,
            )
        )
    return reports


def build_test_index(path: Path, embedder, *, with_reports: bool = True) -> Path:
    store = IndexStore.create(path)
    docs = [Document(content_id("doc", name), text, f"{name}.txt") for name, text in DOCS.items()]
    chunks = [c for d in docs for c in _chunks(d)]
    store.add_documents(docs)
    store.add_chunks(chunks)
    g = _graph(docs, chunks)
    communities = _communities(g)
    reports = _reports(g, communities, store.source_ids()) if with_reports else []
    store.save_graph(g)
    store.save_communities(communities)
    store.save_reports(reports)
    from tiny_graphrag.indexing.pipeline import entity_text

    keys = list(g.nodes)
    store.save_vectors("chunks", [c.id for c in chunks], embedder.embed([c.text for c in chunks]))
    store.save_vectors("entities", keys, embedder.embed([entity_text(g.nodes[k]) for k in keys]))
    store.save_vectors("reports", [r.community_id for r in reports], embedder.embed([r.text() for r in reports]))
    store.write_manifest({"library_version": "test", "embedder": embedder.describe(), "llm": None, "config": {}})
    store.close()
    return path


def doc_text(store: IndexStore, doc_id: str) -> str:
    return store.document(doc_id).text


def points_json(*pairs: tuple[str, int]) -> str:
    return json.dumps({"points": [{"description": d, "score": s} for d, s in pairs]})
