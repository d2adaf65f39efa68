"""Every export read back by the reader its users use, compared with the index; bad input refused."""

from __future__ import annotations

import csv
import json
import re
import shutil

import networkx as nx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _names_index import NAMES, build_names_index

from tiny_graphrag.cli.commands import main
from tiny_graphrag.errors import IndexFormatError, InputError, OutputError
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.outputs.export import cypher_script, export_index

# Microsoft GraphRAG's output columns, in order (graphrag/data_model/schemas.py, *_FINAL_COLUMNS).
GRAPHRAG_COLUMNS = {
    "entities": ["id", "human_readable_id", "title", "type", "description", "text_unit_ids", "frequency", "degree"],
    "relationships": [
        "id",
        "human_readable_id",
        "source",
        "target",
        "description",
        "weight",
        "combined_degree",
        "text_unit_ids",
    ],
    "text_units": [
        "id",
        "human_readable_id",
        "text",
        "n_tokens",
        "document_ids",
        "entity_ids",
        "relationship_ids",
        "covariate_ids",
    ],
    "communities": [
        "id",
        "human_readable_id",
        "community",
        "level",
        "parent",
        "children",
        "title",
        "entity_ids",
        "relationship_ids",
        "text_unit_ids",
        "period",
        "size",
    ],
    "community_reports": [
        "id",
        "human_readable_id",
        "community",
        "level",
        "parent",
        "children",
        "title",
        "summary",
        "full_content",
        "rank",
        "rating_explanation",
        "findings",
        "full_content_json",
        "period",
        "size",
    ],
    "documents": ["id", "human_readable_id", "title", "text", "text_unit_ids", "creation_date", "metadata"],
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    result = build_names_index(tmp_path_factory.mktemp("export") / "graphs" / "names")
    store = IndexStore.open(result.path)
    assert {d["name"] for _, d in store.graph().nodes(data=True)} >= set(NAMES) - {"O’Hare"}
    return store


def _levels(store):
    return {(k, c.level): c.id for c in store.communities() for k in c.nodes}


def _check_scalar_graph(g, store, *, multigraph_keys: bool):
    """A GraphML/GEXF graph read back: every node and edge with its attributes and provenance."""
    graph = store.graph()
    assert g.number_of_nodes() == graph.number_of_nodes() and g.number_of_edges() == graph.number_of_edges()
    levels = _levels(store)
    for key, d in graph.nodes(data=True):
        r = g.nodes[key]
        assert (r["name"], r["type"], int(r["mentions"]), int(r["hid"])) == (
            d["name"],
            d["type"],
            d["mentions"],
            d["hid"],
        )
        assert json.loads(r["aliases"]) == d["aliases"]
        assert json.loads(r["type_votes"]) == d["type_votes"]
        assert [tuple(p) for p in json.loads(r["provenance"])] == [tuple(p) for p in d["provenance"]]
        for (k, lvl), cid in levels.items():
            if k == key:
                assert r[f"community_{lvl}"] == cid
    read_edges = {(u, v, d["label"]): d for u, v, d in g.edges(data=True)}
    for u, v, k, d in graph.edges(keys=True, data=True):
        r = read_edges[(u, v, d["label"])]
        assert float(r["weight"]) == d["weight"] and float(r["score"]) == pytest.approx(d["score"])
        assert [tuple(p) for p in json.loads(r["provenance"])] == [tuple(p) for p in d["provenance"]]
    ids = [k for _, _, k in g.edges(keys=True)] if multigraph_keys else [d["id"] for _, _, d in g.edges(data=True)]
    assert sorted(ids) == sorted(f"e{d['hid']}" for *_, d in graph.edges(data=True))


def test_graphml_round_trip(index, tmp_path):
    [path] = export_index(index, "graphml", tmp_path / "g.graphml")
    _check_scalar_graph(nx.read_graphml(path, force_multigraph=True), index, multigraph_keys=True)


def test_gexf_round_trip(index, tmp_path):
    [path] = export_index(index, "gexf", tmp_path / "g.gexf")
    g = nx.read_gexf(path)
    _check_scalar_graph(g, index, multigraph_keys=False)
    assert {d["label"] for _, d in g.nodes(data=True)} == {d["name"] for _, d in index.graph().nodes(data=True)}


def test_json_node_link_round_trip(index, tmp_path):
    [path] = export_index(index, "json", tmp_path / "g.json")
    g = nx.node_link_graph(json.loads(path.read_text(encoding="utf-8")), edges="links")
    graph, levels = index.graph(), _levels(index)
    assert g.number_of_nodes() == graph.number_of_nodes() and g.number_of_edges() == graph.number_of_edges()
    for key, d in graph.nodes(data=True):
        r = g.nodes[key]
        assert r["aliases"] == d["aliases"] and [tuple(p) for p in r["provenance"]] == d["provenance"]
        assert r["communities"] == {str(lvl): cid for (k, lvl), cid in levels.items() if k == key}
    for u, v, d in graph.edges(data=True):
        [r] = [x for x in g.get_edge_data(u, v).values() if x["label"] == d["label"]]
        assert r["weight"] == d["weight"] and [tuple(p) for p in r["provenance"]] == d["provenance"]


def test_parquet_has_graphrag_schema_and_the_index_data(index, tmp_path):
    paths = export_index(index, "parquet", tmp_path / "parquet")
    tables = {p.stem: pq.read_table(p) for p in paths}
    assert {name: t.schema.names for name, t in tables.items()} == GRAPHRAG_COLUMNS
    graph = index.graph()
    ents = tables["entities"].to_pylist()
    assert len(ents) == graph.number_of_nodes()
    assert {e["title"] for e in ents} == {d["name"] for _, d in graph.nodes(data=True)}
    for e in ents:
        d = graph.nodes[e["id"]]
        assert (e["type"], e["frequency"], e["human_readable_id"]) == (d["type"], d["mentions"], d["hid"])
        assert e["text_unit_ids"] == list(dict.fromkeys(p[1] for p in d["provenance"]))
    rels = tables["relationships"].to_pylist()
    assert len(rels) == graph.number_of_edges() and {r["source"] for r in rels} <= {e["title"] for e in ents}
    assert tables["relationships"].schema.field("weight").type == pa.float64()
    assert tables["entities"].schema.field("text_unit_ids").type == pa.list_(pa.string())
    units = {u["id"]: u for u in tables["text_units"].to_pylist()}
    chunks = index.chunks()
    assert {c.id: c.text for c in chunks} == {i: u["text"] for i, u in units.items()}
    assert any("\n" in u["text"] for u in units.values())  # line breaks inside the text survive
    for e in ents:  # provenance both ways: entity -> its text units -> back to the entity
        assert all(e["id"] in units[u]["entity_ids"] for u in e["text_unit_ids"])
    coms, reports = tables["communities"].to_pylist(), tables["community_reports"].to_pylist()
    assert len(coms) == len(index.communities()) and len(reports) == len(index.reports())
    assert sorted(len(c["entity_ids"]) for c in coms) == sorted(len(c.nodes) for c in index.communities())
    stored = {r.community_id: r for r in index.reports()}
    for r in reports:
        assert r["title"] == stored[r["id"]].title and r["rank"] == stored[r["id"]].rating
        assert [f["explanation"] for f in r["findings"]] == [f.explanation for f in stored[r["id"]].findings]
    assert {d["text"] for d in tables["documents"].to_pylist()} == {d.text for d in index.documents()}


def _statements(script: str):
    """The Cypher script's statements, after checking that quotes and brackets balance."""
    body = "\n".join(line for line in script.splitlines() if not line.startswith("//"))
    out = []
    for stmt in body.split(";\n"):
        stmt = stmt.strip().rstrip(";")
        if not stmt:
            continue
        bare = re.sub(r"`(?:[^`]|``)*`|'(?:[^'\\]|\\.)*'", "", stmt)  # identifiers and strings removed
        assert "`" not in bare and "'" not in bare, stmt
        for a, b in ("()", "{}", "[]"):
            assert bare.count(a) == bare.count(b), stmt
        out.append(stmt)
    return out


def test_neo4j_csv_and_cypher_agree(index, tmp_path):
    paths = export_index(index, "neo4j", tmp_path / "neo4j")
    folder = paths[0].parent
    headers, rows = {}, {}
    for name in ("nodes.csv", "relationships.csv"):
        with open(folder / name, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            rows[name], headers[name] = list(reader), reader.fieldnames
    graph = index.graph()
    assert len(rows["nodes.csv"]) == graph.number_of_nodes()
    assert len(rows["relationships.csv"]) == graph.number_of_edges()
    assert {r["name"] for r in rows["nodes.csv"]} == {d["name"] for _, d in graph.nodes(data=True)}
    for r in rows["nodes.csv"]:
        d = graph.nodes[r["id:ID"]]
        assert r[":LABEL"] == f"Entity;{d['type']}" and json.loads(r["aliases"]) == d["aliases"]
    assert {r[":START_ID"] for r in rows["relationships.csv"]} <= {r["id:ID"] for r in rows["nodes.csv"]}
    stmts = _statements((folder / "load.cypher").read_text(encoding="utf-8"))
    loads = [s for s in stmts if s.startswith("LOAD CSV")]
    types = {d["type"] for _, d in graph.nodes(data=True)}
    labels = {d["label"] for _, _, d in graph.edges(data=True)}
    assert len(loads) == len(types) + len(labels)
    for s in loads:
        [file] = re.findall(r"FROM 'file:///([^']+)'", s)
        used = {c.replace("``", "`") for c in re.findall(r"row\.`((?:[^`]|``)*)`", s)}
        used |= set(re.findall(r"row\.(\w+)", s))
        assert used and used <= set(headers[file]), (file, used - set(headers[file]))
    assert {t for t in types if f"CREATE (n:Entity:`{t}`" in "\n".join(loads)} == types


def test_cypher_names_are_quoted():
    script = cypher_script(["id:ID", "name", ":LABEL"], ["We`ird Type"], ["it's \\ odd"])
    assert "n:Entity:`We``ird Type`" in script and "[:`it's \\ odd`" in script
    assert "row.`:TYPE` = 'it\\'s \\\\ odd'" in script
    _statements(script)


def test_existing_output_refused_unless_force_and_nothing_else_touched(index, tmp_path):
    target = tmp_path / "g.graphml"
    target.write_text("mine", encoding="utf-8")
    with pytest.raises(OutputError, match="--force"):
        export_index(index, "graphml", target)
    assert target.read_text(encoding="utf-8") == "mine"
    export_index(index, "graphml", target, force=True)
    assert nx.read_graphml(target).number_of_nodes() == index.graph().number_of_nodes()

    folder = tmp_path / "neo"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me", encoding="utf-8")
    export_index(index, "neo4j", folder)  # a folder with other files: only our files are added
    with pytest.raises(OutputError, match="nodes.csv"):
        export_index(index, "neo4j", folder)
    export_index(index, "neo4j", folder, force=True)
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in folder.iterdir()) == ["load.cypher", "nodes.csv", "notes.txt", "relationships.csv"]


def test_bad_targets_and_indexes(index, tmp_path):
    with pytest.raises(OutputError, match="inside the index"):
        export_index(index, "json", index.path / "g.json", force=True)
    with pytest.raises(OutputError, match="is a folder"):
        export_index(index, "json", tmp_path, force=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        export_index(index, "parquet", tmp_path / "file", force=True)
    with pytest.raises(InputError, match="graphml"):
        export_index(index, "csv", tmp_path / "x")
    with pytest.raises(IndexFormatError, match="build"):
        export_index(tmp_path / "missing", "json", tmp_path / "x.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    old = tmp_path / "old-index"  # an index of another format version
    shutil.copytree(index.path, old)
    manifest = json.loads((old / "manifest.json").read_text(encoding="utf-8"))
    (old / "manifest.json").write_text(json.dumps({**manifest, "format_version": 0}), encoding="utf-8")
    with pytest.raises(IndexFormatError, match="format version 0.*rebuild"):
        export_index(old, "graphml", tmp_path / "x.graphml")
    assert not (tmp_path / "x.graphml").exists()


def test_cli_export(index, tmp_path, capsys):
    out = tmp_path / "g.gexf"
    assert main(["export", str(index.path), "--format", "gexf", "--out", str(out)]) == 0
    assert nx.read_gexf(out).number_of_nodes() == index.graph().number_of_nodes()
    assert main(["export", str(index.path), "--format", "gexf", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["export", str(index.path), "--format", "gexf", "--out", str(out), "--force"]) == 0
    assert main(["export", str(tmp_path / "nope"), "--format", "json", "--out", str(tmp_path / "x.json")]) == 2
    assert "no index at" in capsys.readouterr().err
