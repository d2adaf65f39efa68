"""Graph construction, node keys, schema enforcement and safe persistence."""

from __future__ import annotations

import collections
import os
import pickle
import subprocess
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from tiny_graphrag.errors import IndexFormatError
from tiny_graphrag.index.graph import assign_hids, build_graph, load_graph, normalize_name, save_graph
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention
from tiny_graphrag.schema import Schema

SCHEMA = Schema.preset("general")


# ---- helpers --------------------------------------------------------------------------------


def make_chunks(doc_id: str, text: str, *cuts: int) -> list[Chunk]:
    """Split text at the given offsets into chunks carrying document-level start/end."""
    bounds = [0, *cuts, len(text)]
    return [
        Chunk(
            id=f"{doc_id}-c{i}", doc_id=doc_id, index=i, text=text[s:e], start=s, end=e, n_tokens=len(text[s:e].split())
        )
        for i, (s, e) in enumerate(zip(bounds, bounds[1:]))
    ]


def ment(chunk: Chunk, surface: str, type_: str, nth: int = 0, score: float = 0.9) -> EntityMention:
    """The nth occurrence of surface in the chunk, with chunk-level offsets."""
    start = -1
    for _ in range(nth + 1):
        start = chunk.text.index(surface, start + 1)
    return EntityMention(text=surface, type=type_, start=start, end=start + len(surface), score=score)


def rel(head: EntityMention, tail: EntityMention, label: str, score: float = 0.8) -> RelationMention:
    return RelationMention(head=head, tail=tail, label=label, score=score)


def one_chunk_graph(text: str, entities, relations=(), schema: Schema = SCHEMA) -> nx.MultiDiGraph:
    (chunk,) = make_chunks("d", text)
    ents = {name: ment(chunk, surface, t, nth) for name, (surface, t, nth) in entities.items()}
    rels = tuple(rel(ents[h], ents[t], label) for h, t, label in relations)
    return build_graph([chunk], [Extraction(chunk.id, tuple(ents.values()), rels)], schema)


# ---- normalization --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "surface, key",
    [
        ("Barack Obama", "barack obama"),
        ("BARACK obama", "barack obama"),
        ("  Barack \t\n Obama  ", "barack obama"),
        ("Ｂａｒａｃｋ　Ｏｂａｍａ", "barack obama"),  # fullwidth letters and space (NFKC)
        ("ﬁnance ministry", "finance ministry"),  # ligature (NFKC)
        ("Stra\u00dfe", "strasse"),  # casefold, not lower
        ("Ba\u200brack Obama", "barack obama"),  # zero-width space
        ("Obama's", "obama"),
        ("Obama\u2019s", "obama"),
        ("James'", "james"),
        ("James\u2019", "james"),
        ('"Obama\'s."', "obama"),
        ("O\u2019Brien", "o'brien"),
        ("«Le Monde»", "le monde"),
        ("(UN)", "un"),
        ("Apple (company)", "apple (company)"),
        ("U.S.", "u.s"),
        ("Obama,", "obama"),
        ("-- Obama --", "obama"),
        ("C#", "c#"),
        ("C++", "c++"),
        ("AT&T", "at&t"),
        (".NET", ".net"),
        ("the United Nations", "the united nations"),  # conservative: articles are kept
        ("...", ""),
        ("   ", ""),
    ],
)
def test_normalize_name(surface: str, key: str) -> None:
    assert normalize_name(surface) == key


# ---- nodes ----------------------------------------------------------------------------------


def test_provenance_offsets_are_document_level() -> None:
    text = "An intro sentence. Barack Obama worked for the United Nations. Obama\u2019s office was in Geneva."
    chunks = make_chunks("doc", text, text.index("Barack"), text.index("Obama\u2019s"))
    c0, c1, c2 = chunks
    obama, un = ment(c1, "Barack Obama", "Person"), ment(c1, "United Nations", "Organization")
    obama2, geneva = ment(c2, "Obama\u2019s", "Person"), ment(c2, "Geneva", "Location")
    extractions = [
        Extraction(c0.id),
        Extraction(c1.id, (obama, un), (rel(obama, un, "works for"),)),
        Extraction(c2.id, (obama2, geneva)),
    ]
    g = build_graph(chunks, extractions, SCHEMA)

    assert set(g) == {"barack obama", "obama", "united nations", "geneva"}
    for key, data in g.nodes(data=True):
        assert data["mentions"] == len(data["provenance"]) == 1
        for doc_id, chunk_id, start, end in data["provenance"]:
            assert doc_id == "doc" and text[start:end] in data["aliases"]
    assert g.nodes["obama"]["provenance"] == [
        ("doc", c2.id, text.index("Obama\u2019s"), text.index("Obama\u2019s") + 7)
    ]
    assert g.nodes["obama"]["name"] == "Obama\u2019s"

    ((u, v, k, e),) = g.edges(keys=True, data=True)
    assert (u, v, k, e["label"]) == ("barack obama", "united nations", "works for", "works for")
    ((_, chunk_id, start, end),) = e["provenance"]
    assert chunk_id == c1.id and text[start:end] == "Barack Obama worked for the United Nations"


def test_display_name_majority_and_first_seen_tie() -> None:
    g = one_chunk_graph(
        "OBAMA said. Obama said. Obama said. Biden and BIDEN met.",
        {
            "a": ("OBAMA", "Person", 0),
            "b": ("Obama", "Person", 0),
            "c": ("Obama", "Person", 1),
            "d": ("Biden", "Person", 0),
            "e": ("BIDEN", "Person", 0),
        },
    )
    assert g.nodes["obama"]["name"] == "Obama" and g.nodes["obama"]["mentions"] == 3
    assert g.nodes["obama"]["aliases"] == ["OBAMA", "Obama"]
    assert g.nodes["biden"]["name"] == "Biden"  # 1-1 tie: first seen


@pytest.mark.parametrize(
    "types, expected, conflict",
    [
        (["Person", "Person", "Location"], "Person", True),
        (["Location", "Person", "Person"], "Person", True),
        (["Location", "Person"], "Location", True),  # tie: first seen
        (["Person", "Location"], "Person", True),
        (["Person", "Person"], "Person", False),
    ],
)
def test_type_majority_vote_and_conflicts(types: list[str], expected: str, conflict: bool) -> None:
    text = " ".join("Jordan spoke." for _ in types)
    g = one_chunk_graph(text, {str(i): ("Jordan", t, i) for i, t in enumerate(types)})
    node = g.nodes["jordan"]
    assert node["type"] == expected and node["type_conflict"] is conflict
    assert sum(node["type_votes"].values()) == len(types) == node["mentions"]
    if conflict:
        assert g.graph["type_conflicts"]["jordan"] == {"chosen": expected, "votes": node["type_votes"]}
    else:
        assert g.graph["type_conflicts"] == {}


def test_overlapping_chunks_count_a_mention_once() -> None:
    text = "Ada Lovelace worked for Babbage Ltd in London."
    full = make_chunks("d", text)[0]
    overlap = Chunk(id="d-c1", doc_id="d", index=1, text=text[4:], start=4, end=len(text), n_tokens=7)
    e1, e2 = (
        Extraction(
            c.id,
            (ment(c, "Lovelace", "Person"), ment(c, "Babbage Ltd", "Organization")),
            (rel(ment(c, "Lovelace", "Person"), ment(c, "Babbage Ltd", "Organization"), "works for", s),),
        )
        for c, s in ((full, 0.6), (overlap, 0.9))
    )
    g = build_graph([full, overlap], [e1, e2], SCHEMA)
    assert g.nodes["lovelace"]["mentions"] == 1
    edge = g.edges["lovelace", "babbage ltd", "works for"]
    assert edge["weight"] == 1 and edge["score"] == 0.9


# ---- edges ----------------------------------------------------------------------------------


def test_schema_constraints_enforced_on_final_node_types() -> None:
    text = "Ada works for Acme. Acme works for Ada. Ada likes Acme. Paris works for Acme. Paris Paris."
    (c,) = make_chunks("d", text)
    ada, acme = ment(c, "Ada", "Person"), ment(c, "Acme", "Organization")
    acme2, ada2 = ment(c, "Acme", "Organization", 1), ment(c, "Ada", "Person", 1)
    ada3, acme3 = ment(c, "Ada", "Person", 2), ment(c, "Acme", "Organization", 2)
    # "Paris" is tagged Person in the relation, but two of its three mentions say Location:
    # the node is a Location and "works for" needs a Person head.
    paris_p, acme4 = ment(c, "Paris", "Person"), ment(c, "Acme", "Organization", 3)
    paris_l1, paris_l2 = ment(c, "Paris", "Location", 1), ment(c, "Paris", "Location", 2)
    extraction = Extraction(
        c.id,
        (ada, acme, paris_l1, paris_l2),
        (
            rel(ada, acme, "works for"),  # allowed
            rel(acme2, ada2, "works for"),  # wrong direction: Organization -> Person
            rel(ada3, acme3, "likes"),  # label not in the schema
            rel(paris_p, acme4, "works for"),  # mention type Person, node type Location
        ),
    )
    g = build_graph([c], [extraction], SCHEMA)
    assert g.nodes["paris"]["type"] == "Location"
    assert list(g.edges(keys=True)) == [("ada", "acme", "works for")]
    assert g.graph["dropped_relations"] == {"type_constraint": 2, "unknown_label": 1}
    for u, v, k in g.edges(keys=True):
        assert SCHEMA.allows(k, g.nodes[u]["type"], g.nodes[v]["type"])


def test_self_loops_dropped() -> None:
    g = one_chunk_graph(
        "Obama and Obama's wife.",
        {"a": ("Obama", "Person", 0), "b": ("Obama's", "Person", 0)},
        [("a", "b", "spouse of")],
    )
    assert g.number_of_edges() == 0 and g.graph["dropped_relations"] == {"self_loop": 1}
    assert g.nodes["obama"]["mentions"] == 2


def test_parallel_relations_and_direction_kept() -> None:
    g = one_chunk_graph(
        "Marie and Pierre. Pierre and Marie. Marie and Pierre again.",
        {
            "m0": ("Marie", "Person", 0),
            "p0": ("Pierre", "Person", 0),
            "p1": ("Pierre", "Person", 1),
            "m1": ("Marie", "Person", 1),
            "m2": ("Marie", "Person", 2),
            "p2": ("Pierre", "Person", 2),
        },
        [("m0", "p0", "spouse of"), ("p1", "m1", "spouse of"), ("m2", "p2", "related to"), ("m2", "p2", "spouse of")],
    )
    assert sorted(g.edges(keys=True)) == [
        ("marie", "pierre", "related to"),
        ("marie", "pierre", "spouse of"),
        ("pierre", "marie", "spouse of"),
    ]
    spouse = g.edges["marie", "pierre", "spouse of"]
    assert spouse["weight"] == len(spouse["provenance"]) == 2 and spouse["label"] == "spouse of"


def test_hids_are_content_derived_and_sorted() -> None:
    # (Was test_hids_are_dense_and_sorted: hids were 0..N-1; issue 14 made them content-derived.)
    g = one_chunk_graph(
        "Zoe met Adam at Acme in Berlin.",
        {
            "z": ("Zoe", "Person", 0),
            "a": ("Adam", "Person", 0),
            "o": ("Acme", "Organization", 0),
            "b": ("Berlin", "Location", 0),
        },
        [("z", "o", "works for"), ("a", "o", "works for"), ("o", "b", "located in")],
    )
    assert [k for k in g] == sorted(g)
    edges = list(g.edges(keys=True, data=True))
    assert [(u, v, k) for u, v, k, _ in edges] == sorted((u, v, k) for u, v, k, _ in edges)
    assert len({d["hid"] for _, d in g.nodes(data=True)}) == len(g) and len({d["hid"] for *_, d in edges}) == 3
    # A smaller graph (one entity and its relation gone) keeps every other hid.
    h = one_chunk_graph(
        "Zoe met Adam at Acme in Berlin.",
        {"z": ("Zoe", "Person", 0), "o": ("Acme", "Organization", 0), "b": ("Berlin", "Location", 0)},
        [("z", "o", "works for"), ("o", "b", "located in")],
    )
    assert all(h.nodes[k]["hid"] == g.nodes[k]["hid"] for k in h)
    assert all(h.edges[e]["hid"] == g.edges[e]["hid"] for e in h.edges(keys=True))
    assert g.graph["schema"] == SCHEMA.to_dict() and g.graph["merges"] == []


def test_unknown_chunk_is_an_error() -> None:
    with pytest.raises(ValueError, match="not among the chunks"):
        build_graph([], [Extraction("nope")], SCHEMA)


# ---- persistence ----------------------------------------------------------------------------


@pytest.fixture()
def graph() -> nx.MultiDiGraph:
    g = one_chunk_graph(
        "Ada Lovelace works for Babbage Ltd in London. Lovelace lives in London.",
        {
            "a": ("Ada Lovelace", "Person", 0),
            "b": ("Babbage Ltd", "Organization", 0),
            "l": ("London", "Location", 0),
            "a2": ("Lovelace", "Person", 0),
            "l2": ("London", "Location", 1),
        },
        [("a", "b", "works for"), ("b", "l", "located in"), ("a2", "l2", "lives in")],
    )
    g.graph["extra"] = {"set": {1, 2}, "frozen": frozenset({"x"}), "none": None, "nested": [(1, 2.5, True)]}
    return g


def _snapshot(g: nx.MultiDiGraph):
    return (list(g.nodes(data=True)), list(g.edges(keys=True, data=True)), g.graph)


def test_save_load_round_trip(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    # Cached views and numpy scores must not leak classes into the pickle.
    _ = graph.nodes, graph.edges, graph.in_edges, graph.degree, graph.adj, graph.pred
    graph.edges["ada lovelace", "babbage ltd", "works for"]["score"] = np.float32(0.75)
    path = tmp_path / "index" / "graph.pkl"
    save_graph(graph, path)
    loaded = load_graph(path)
    assert type(loaded) is nx.MultiDiGraph
    assert _snapshot(loaded) == _snapshot(graph)
    assert type(loaded.edges["ada lovelace", "babbage ltd", "works for"]["score"]) is float
    assert loaded._succ is loaded._adj  # networkx relies on this identity
    loaded.add_edge("london", "ada lovelace", key="x")  # a usable graph, not just equal data
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind


def test_save_replaces_atomically(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    path = tmp_path / "graph.pkl"
    save_graph(nx.MultiDiGraph(), path)
    save_graph(graph, path)
    assert load_graph(path).number_of_nodes() == graph.number_of_nodes()


def test_save_refuses_values_the_loader_would_refuse(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    graph.nodes["london"]["where"] = Path("/tmp")
    with pytest.raises(TypeError, match="plain Python values"):
        save_graph(graph, tmp_path / "graph.pkl")
    assert not (tmp_path / "graph.pkl").exists()


class _Payload:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _tampered_payloads(marker: Path) -> dict[str, bytes]:
    g = nx.MultiDiGraph()
    g.add_node("x", name=_Payload(marker))  # a legitimate graph carrying a payload inside
    return {
        "os.system": pickle.dumps(_Payload(marker)),
        "nested": pickle.dumps(g, protocol=5),
        "OrderedDict": pickle.dumps(collections.OrderedDict(a=1)),
        "Popen": pickle.dumps(subprocess.Popen),
        "eval": b"cbuiltins\neval\n(Vprint(1)\ntR.",
    }


@pytest.mark.parametrize("kind", ["os.system", "nested", "OrderedDict", "Popen", "eval"])
def test_tampered_pickle_refused_without_running_it(kind: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "graph.pkl"
    path.write_bytes(_tampered_payloads(marker)[kind])
    with pytest.raises(IndexFormatError, match="refused to load: the pickle references .*tampered") as info:
        load_graph(path)
    assert "tiny-graphrag build" in str(info.value)
    assert not marker.exists()


def test_payload_really_would_run(tmp_path: Path) -> None:
    """Guard for the test above: the payload is live under the plain unpickler."""
    marker = tmp_path / "pwned"
    pickle.loads(_tampered_payloads(marker)["os.system"])
    assert marker.exists()


@pytest.mark.parametrize("cut", [0, 1, 10, -1, -20])
def test_truncated_file(graph: nx.MultiDiGraph, tmp_path: Path, cut: int) -> None:
    path = tmp_path / "graph.pkl"
    save_graph(graph, path)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    with pytest.raises(IndexFormatError, match="truncated or corrupt"):
        load_graph(path)


def test_garbage_file(tmp_path: Path) -> None:
    path = tmp_path / "graph.pkl"
    path.write_bytes(b"\x00\x01not a pickle at all")
    with pytest.raises(IndexFormatError, match="truncated or corrupt"):
        load_graph(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IndexFormatError, match="does not exist"):
        load_graph(tmp_path / "graph.pkl")


@pytest.mark.parametrize("obj", [{"nodes": []}, [1, 2], nx.Graph(), nx.DiGraph([(1, 2)])])
def test_not_a_multidigraph(obj, tmp_path: Path) -> None:
    path = tmp_path / "graph.pkl"
    path.write_bytes(pickle.dumps(obj, protocol=5))
    with pytest.raises(IndexFormatError, match="not a networkx MultiDiGraph"):
        load_graph(path)


def test_plain_pickle_of_graph_with_views_loads(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    """A graph written with plain pickle.dump (cached views included) still loads."""
    _ = graph.nodes, graph.edges, graph.in_edges, graph.degree, graph.in_degree, graph.out_degree, graph.adj
    path = tmp_path / "graph.pkl"
    path.write_bytes(pickle.dumps(graph, protocol=5))
    assert _snapshot(load_graph(path)) == _snapshot(graph)


def test_assign_hids_keeps_graph_data(graph: nx.MultiDiGraph) -> None:
    before = _snapshot(graph)
    graph.add_node("aaa", name="AAA", type="Person")
    graph.remove_node("aaa")
    assign_hids(graph)
    assert _snapshot(graph) == before


def test_saved_pickle_names_only_the_graph_class(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    """What save_graph writes references nothing but MultiDiGraph and builtins (checked like pickletools would)."""
    import io

    _ = graph.nodes, graph.edges, graph.degree  # cached views must not be written
    graph.graph["score"] = np.float64(0.5)
    path = tmp_path / "graph.pkl"
    save_graph(graph, path)
    seen: set[tuple[str, str]] = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            seen.add((module, name))
            return super().find_class(module, name)

    Recorder(io.BytesIO(path.read_bytes())).load()
    assert seen <= {("networkx.classes.multidigraph", "MultiDiGraph"), ("builtins", "float")}
    assert ("networkx.classes.multidigraph", "MultiDiGraph") in seen
