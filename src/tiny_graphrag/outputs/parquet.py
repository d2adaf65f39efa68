"""The index as Microsoft GraphRAG's output tables (parquet), so GraphRAG's notebooks and viewers read it.

Columns and their order follow GraphRAG's data model (graphrag/data_model/schemas.py, the *_FINAL_COLUMNS lists). Where
our index has no such value it is derived and said so here:
- entity ``description``: type, mention count and aliases (we extract; no LLM summarises entities);
- relationship ``description``: "head label tail"; ``combined_degree``: degree(head) + degree(tail);
- community ``title``: its report's title, else "Community N"; ``period``: the build date;
- ids: entity = node key, relationship = "e<hid>", text unit = chunk id, community/report = our community id;
  ``human_readable_id`` and ``community`` are the integers GraphRAG uses."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import asdict

from tiny_graphrag.errors import require
from tiny_graphrag.index.store import IndexStore

GRAPHRAG_TABLES = ("entities", "relationships", "text_units", "communities", "community_reports", "documents")
# Each table's columns in GraphRAG's order, as "name:type" (the types are in _schemas).
_HEAD = "id:s human_readable_id:i "
_COMMUNITY = _HEAD + "community:i level:i parent:i children:li title:s "
COLUMNS = {
    "entities": _HEAD + "title:s type:s description:s text_unit_ids:ls frequency:i degree:i",
    "relationships": _HEAD + "source:s target:s description:s weight:f combined_degree:i text_unit_ids:ls",
    "text_units": _HEAD + "text:s n_tokens:i document_ids:ls entity_ids:ls relationship_ids:ls covariate_ids:ls",
    "communities": _COMMUNITY + "entity_ids:ls relationship_ids:ls text_unit_ids:ls period:s size:i",
    "community_reports": _COMMUNITY + "summary:s full_content:s rank:f rating_explanation:s findings:findings "
    "full_content_json:s period:s size:i",
    "documents": _HEAD + "title:s text:s text_unit_ids:ls creation_date:s metadata:s",
}


def _schemas(pa) -> dict:
    types = dict(s=pa.string(), i=pa.int64(), f=pa.float64(), ls=pa.list_(pa.string()), li=pa.list_(pa.int64()))
    types["findings"] = pa.list_(pa.struct([("summary", pa.string()), ("explanation", pa.string())]))
    return {table: [(c, types[t]) for c, t in (x.split(":") for x in spec.split())] for table, spec in COLUMNS.items()}


def _row(table: str, *values) -> dict:
    """A row of `table`: its values in column order."""
    return dict(zip((c.split(":")[0] for c in COLUMNS[table].split()), values, strict=True))


def entity_description(node: dict) -> str:
    """What we can say of an entity without an LLM: its type, mention count and other names."""
    aliases = ", ".join(a for a in node["aliases"] if a != node["name"])
    return f"{node['type']}, mentioned {node['mentions']} times" + (f"; also called {aliases}" if aliases else "")


def _chunk_ids(provenance) -> list[str]:
    """The chunks of (doc, chunk, start, end) provenance entries, each once, in order."""
    return list(dict.fromkeys(p[1] for p in provenance))


def graphrag_rows(store: IndexStore) -> dict[str, list[dict]]:
    """The six GraphRAG tables as lists of row dicts."""
    graph = store.graph()
    period = str(store.manifest.get("created", ""))[:10]
    names = Counter(d["name"] for _, d in graph.nodes(data=True))
    # relationships name their ends by entity title, so titles must be unique: a shared name gets its key
    title = {k: (d["name"] if names[d["name"]] == 1 else f"{d['name']} ({k})") for k, d in graph.nodes(data=True)}
    degree = dict(graph.degree())
    chunk_entities, chunk_edges = defaultdict(list), defaultdict(list)
    entities = []
    for k, d in graph.nodes(data=True):
        units = _chunk_ids(d["provenance"])
        for u in units:
            chunk_entities[u].append(k)
        row: tuple = (k, d["hid"], title[k], d["type"], entity_description(d), units, d["mentions"], degree[k])
        entities.append(_row("entities", *row))
    relationships = []
    for u, v, d in graph.edges(data=True):
        rid = f"e{d['hid']}"
        units = _chunk_ids(d["provenance"])
        for cid in units:
            chunk_edges[cid].append(rid)
        description = f"{graph.nodes[u]['name']} {d['label']} {graph.nodes[v]['name']}"
        row = (rid, d["hid"], title[u], title[v], description, float(d["weight"]), degree[u] + degree[v], units)
        relationships.append(_row("relationships", *row))
    sid = store.source_ids()
    text_units, chunks_of_doc = [], defaultdict(list)
    for c in store.chunks():
        row = (c.id, sid[c.id], c.text, c.n_tokens, [c.doc_id], chunk_entities.get(c.id, []), chunk_edges.get(c.id, []))
        text_units.append(_row("text_units", *row, []))  # no covariates: claims are not extracted
        chunks_of_doc[c.doc_id].append(c)
    communities, reports = _communities(store, graph, period)
    documents = []
    for n, doc in enumerate(store.documents()):
        units = [c.id for c in chunks_of_doc[doc.id]]
        metadata = _document_metadata(doc, chunks_of_doc[doc.id])
        row = (doc.id, n, doc.source, doc.text, units, store.manifest.get("created"), metadata)
        documents.append(_row("documents", *row))
    return dict(zip(GRAPHRAG_TABLES, (entities, relationships, text_units, communities, reports, documents)))


def _document_metadata(doc, chunks) -> str | None:
    """GraphRAG's document metadata (JSON): author, date, a row's columns, and for a document with
    pages (rows, messages) each one's label, start and text units, by the unit a text unit starts in."""
    units = [{"unit": label, "start": start, "text_unit_ids": []} for label, start in doc.units]
    starts = [start for _, start in doc.units]
    for c in chunks:
        if units:
            units[max(bisect_right(starts, c.start) - 1, 0)]["text_unit_ids"].append(c.id)
    meta = {**doc.metadata, **({"units": units} if units else {})}
    return json.dumps(meta, ensure_ascii=False) if meta else None


def _communities(store, graph, period) -> tuple[list[dict], list[dict]]:
    coms = store.communities()
    number = {c.id: n for n, c in enumerate(coms)}
    reports = {r.community_id: r for r in store.reports()}
    rows, report_rows = [], []
    for n, c in enumerate(coms):
        report = reports.get(c.id)
        parent, children = number.get(c.parent, -1), [number[x] for x in c.children]
        base = (c.id, n, n, c.level, parent, children, report.title if report else f"Community {n}")
        units = _chunk_ids(p for k in c.nodes for p in graph.nodes[k]["provenance"])
        edges = [f"e{graph.edges[e]['hid']}" for e in c.edges]
        rows.append(_row("communities", *base, list(c.nodes), edges, units, period, len(c.nodes)))
        if report:
            findings, as_json = [asdict(f) for f in report.findings], json.dumps(asdict(report), ensure_ascii=False)
            about = (report.summary, report.text(), float(report.rating), report.rating_explanation, findings, as_json)
            report_rows.append(_row("community_reports", *base, *about, period, len(c.nodes)))
    return rows, report_rows


def graphrag_tables(store: IndexStore) -> dict:
    """table name -> pyarrow Table with GraphRAG's columns and types."""
    pa = require("pyarrow", "export", "Parquet export")
    schemas, rows = _schemas(pa), graphrag_rows(store)
    return {name: pa.Table.from_pylist(rows[name], schema=pa.schema(schemas[name])) for name in GRAPHRAG_TABLES}
