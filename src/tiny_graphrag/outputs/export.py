"""Export an index to the files analysts open: GraphML, GEXF, JSON node-link, GraphRAG parquet, Neo4j.

GraphML and GEXF hold only scalar attributes, so every list or dict attribute (aliases, provenance, type_votes) is
written as a JSON string, and a node's community at level N as the scalar attribute ``community_N``. JSON node-link
keeps them as JSON lists and objects. Edges get the key ``e<hid>`` (unique in the file: Gephi merges edges that share an
id) and keep their relation in ``label``.

Nothing but the files named here is ever written: an existing output is refused unless ``force``, and even then only a
file (or, for folder formats, our own file names in the folder) is replaced; an output inside the index folder is
refused, since a rebuild replaces it."""

from __future__ import annotations

import csv
import functools
import json
import logging
import os
from pathlib import Path

import networkx as nx

from tiny_graphrag.errors import InputError, require
from tiny_graphrag.index.placement import check_target, write_atomic
from tiny_graphrag.index.store import IndexStore
from tiny_graphrag.outputs.parquet import GRAPHRAG_TABLES, graphrag_tables

log = logging.getLogger(__name__)

FORMATS = ("graphml", "gexf", "json", "parquet", "neo4j")
NEO4J_FILES = ("nodes.csv", "relationships.csv", "load.cypher")
_JSON_ATTRS = ("aliases", "provenance", "type_votes")
_dumps = functools.partial(json.dumps, ensure_ascii=False)


def export_index(
    index: str | os.PathLike[str] | IndexStore, fmt: str, out: str | os.PathLike[str], *, force: bool = False
) -> list[Path]:
    """Write the index in `fmt` (one of FORMATS) to `out` (a file, or a folder for parquet/neo4j); the files written."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format '{fmt}': choose one of {', '.join(FORMATS)}")
    store = index if isinstance(index, IndexStore) else IndexStore.open(index)
    if fmt == "parquet":
        pq = require("pyarrow.parquet", "export", "Parquet export")
        folder = check_target(Path(out), store.path, force, [f"{t}.parquet" for t in GRAPHRAG_TABLES])
        for name, table in graphrag_tables(store).items():
            write_atomic(folder / f"{name}.parquet", functools.partial(pq.write_table, table), "wb")
        return [folder / f"{t}.parquet" for t in GRAPHRAG_TABLES]
    if fmt == "neo4j":
        folder = check_target(Path(out), store.path, force, NEO4J_FILES)
        return _neo4j(store, folder)
    path = check_target(Path(out), store.path, force, None)
    if fmt == "json":
        data = nx.node_link_data(json_graph(store), edges="links")
        write_atomic(path, lambda fh: json.dump(data, fh, ensure_ascii=False, indent=1), "w")
    else:
        flat = flat_graph(store)
        if fmt == "gexf":  # GEXF takes edge ids from an "id" attribute; without one networkx numbers them
            for _, _, k, d in flat.edges(keys=True, data=True):
                d["id"] = k
        writer = nx.write_graphml if fmt == "graphml" else nx.write_gexf
        write_atomic(path, lambda fh: writer(flat, fh), "wb")
    log.info("exported %s as %s to %s", store.path, fmt, path)
    return [path]


def community_levels(store: IndexStore) -> dict[str, dict[int, str]]:
    """node key -> {level: community id} (every level partitions all nodes)."""
    out: dict[str, dict[int, str]] = {}
    for c in store.communities():
        for key in c.nodes:
            out.setdefault(key, {})[c.level] = c.id
    return out


def json_graph(store: IndexStore) -> nx.MultiDiGraph:
    """The index graph with plain JSON values (tuples as lists) and a `communities` {level: id} per node."""
    graph, levels = store.graph(), community_levels(store)
    # merges are records of `resolve` (in old indexes, copies of whole nodes and edges), not part of the graph
    g: nx.MultiDiGraph[str] = nx.MultiDiGraph(**{k: v for k, v in graph.graph.items() if k != "merges"})
    for key, data in graph.nodes(data=True):
        g.add_node(key, **_plain(data), communities={str(lvl): cid for lvl, cid in levels.get(key, {}).items()})
    for u, v, data in graph.edges(data=True):
        g.add_edge(u, v, key=f"e{data['hid']}", **_plain(data))
    return g


def flat_graph(store: IndexStore) -> nx.MultiDiGraph:
    """The index graph with scalar attributes only, for GraphML and GEXF (see the module docstring)."""
    g = json_graph(store)
    flat: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for key, data in g.nodes(data=True):
        communities = {f"community_{lvl}": cid for lvl, cid in data.pop("communities").items()}
        flat.add_node(key, label=data["name"], **_scalars(data), **communities)
    for u, v, k, data in g.edges(keys=True, data=True):
        flat.add_edge(u, v, key=k, **_scalars(data))
    return flat


def _scalars(data: dict) -> dict:
    return {k: (_dumps(v) if k in _JSON_ATTRS else v) for k, v in data.items()}


def _plain(data: dict) -> dict:
    return json.loads(_dumps(data))  # tuples -> lists, numpy-free plain values


# neo4j-admin import headers (name:type, :ID, :LABEL, :START_ID...); LOAD CSV reads the same
# headers as plain column names, so the Cypher script quotes them with backticks.
_NODE_HEADER = ["id:ID", "name", "type", "mentions:int", "aliases", "provenance", "hid:int", ":LABEL"]
_EDGE_HEADER = [":START_ID", ":END_ID", ":TYPE", "label", "weight:int", "score:float", "provenance", "hid:int"]


def _neo4j(store: IndexStore, folder: Path) -> list[Path]:
    graph = store.graph()
    levels = sorted({c.level for c in store.communities()})
    node_header = _NODE_HEADER[:-1] + [f"community_{lvl}" for lvl in levels] + _NODE_HEADER[-1:]
    where = community_levels(store)

    def node_row(k: str, d: dict) -> list:  # in the order of node_header
        row = [k, d["name"], d["type"], d["mentions"], _dumps(d["aliases"]), _dumps(d["provenance"]), d["hid"]]
        return row + [where.get(k, {}).get(lvl, "") for lvl in levels] + ["Entity;" + d["type"]]

    nodes = [node_row(k, d) for k, d in graph.nodes(data=True)]
    edges = [
        [u, v, d["label"], d["label"], d["weight"], d["score"], _dumps(d["provenance"]), d["hid"]]
        for u, v, d in graph.edges(data=True)
    ]
    write_atomic(folder / "nodes.csv", lambda fh: csv.writer(fh).writerows([node_header, *nodes]))
    write_atomic(folder / "relationships.csv", lambda fh: csv.writer(fh).writerows([_EDGE_HEADER, *edges]))
    types = sorted({d["type"] for _, d in graph.nodes(data=True)})
    labels = sorted({d["label"] for _, _, d in graph.edges(data=True)})
    write_atomic(folder / "load.cypher", lambda fh: fh.write(cypher_script(node_header, types, labels)))
    return [folder / n for n in NEO4J_FILES]


def _q(name: str) -> str:
    """A Cypher identifier in backticks (any script, spaces or punctuation survive)."""
    return "`" + name.replace("`", "``") + "`"


def _s(text: str) -> str:
    """A Cypher string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cypher_script(node_header: list[str], types: list[str], labels: list[str]) -> str:
    """LOAD CSV statements for nodes.csv and relationships.csv (files in Neo4j's import folder)."""
    props = ", ".join(f"{_q(h.split(':')[0])}: {_cast(h)}" for h in node_header if h != ":LABEL")
    lines = [
        "// Load with cypher-shell -f load.cypher after copying the CSV files into Neo4j's import folder;",
        "// or: neo4j-admin database import full --nodes=nodes.csv --relationships=relationships.csv "
        "--multiline-fields=true",
        "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE;",
    ]
    for t in types:  # a label cannot come from a parameter in plain Cypher: one statement per type
        lines.append(
            f"LOAD CSV WITH HEADERS FROM 'file:///nodes.csv' AS row WITH row WHERE row.type = {_s(t)} "
            f"CREATE (n:Entity:{_q(t)} {{{props}}});"
        )
    edge_props = ", ".join(f"{_q(h.split(':')[0])}: {_cast(h)}" for h in _EDGE_HEADER if not h.startswith(":"))
    for label in labels:
        lines.append(
            f"LOAD CSV WITH HEADERS FROM 'file:///relationships.csv' AS row WITH row "
            f"WHERE row.`:TYPE` = {_s(label)} MATCH (a:Entity {{id: row.`:START_ID`}}), "
            f"(b:Entity {{id: row.`:END_ID`}}) CREATE (a)-[:{_q(label)} {{{edge_props}}}]->(b);"
        )
    return "\n".join(lines) + "\n"


def _cast(header: str) -> str:
    kind = header.split(":")[1] if ":" in header else ""
    ref = f"row.{_q(header)}"
    return {"int": f"toInteger({ref})", "float": f"toFloat({ref})"}.get(kind, ref)
