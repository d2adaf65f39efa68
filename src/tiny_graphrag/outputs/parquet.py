"""The index as Microsoft GraphRAG's output tables (parquet), so GraphRAG's notebooks and viewers read it.

Columns and their order follow GraphRAG's data model (graphrag/data_model/schemas.py, the
*_FINAL_COLUMNS lists). Where our index has no such value it is derived and said so here:
- entity ``description``: type, mention count and aliases (we extract; no LLM summarises entities);
- relationship ``description``: "head label tail"; ``combined_degree``: degree(head) + degree(tail);
- community ``title``: its report's title, else "Community N"; ``period``: the build date;
- ids: entity = node key, relationship = "e<hid>", text unit = chunk id, community/report = our
  community id; ``human_readable_id`` and ``community`` are the integers GraphRAG uses.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import asdict

from tiny_graphrag.errors import require
from tiny_graphrag.index.store import IndexStore

GRAPHRAG_TABLES = ("entities", "relationships", "text_units", "communities", "community_reports", "documents")


def _schemas(pa) -> dict:
    types = {"s": pa.string(), "i": pa.int64(), "f": pa.float64(), "ls": pa.list_(pa.string())}
    types |= {
        "li": pa.list_(pa.int64()),
        "findings": pa.list_(pa.struct([("summary", pa.string()), ("explanation", pa.string())])),
    }

    def columns(spec: str) -> list:  # "name:type ...", with the types above
        return [(name, types[t]) for name, t in (c.split(":") for c in spec.split())]

    head = "id:s human_readable_id:i "
    com = "community:i level:i parent:i children:li title:s "
    return {
        "entities": columns(head + "title:s type:s description:s text_unit_ids:ls frequency:i degree:i"),
        "relationships": columns(head + "source:s target:s description:s weight:f combined_degree:i text_unit_ids:ls"),
        "text_units": columns(
            head + "text:s n_tokens:i document_ids:ls entity_ids:ls relationship_ids:ls covariate_ids:ls"
        ),
        "communities": columns(head + com + "entity_ids:ls relationship_ids:ls text_unit_ids:ls period:s size:i"),
        "community_reports": columns(
            head + com + "summary:s full_content:s rank:f rating_explanation:s findings:findings "
            "full_content_json:s period:s size:i"
        ),
        "documents": columns(head + "title:s text:s text_unit_ids:ls creation_date:s metadata:s"),
    }


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
        entities.append(
            {
                "id": k,
                "human_readable_id": d["hid"],
                "title": title[k],
                "type": d["type"],
                "description": entity_description(d),
                "text_unit_ids": units,
                "frequency": d["mentions"],
                "degree": degree[k],
            }
        )
    relationships = []
    for u, v, d in graph.edges(data=True):
        rid = f"e{d['hid']}"
        units = _chunk_ids(d["provenance"])
        for cid in units:
            chunk_edges[cid].append(rid)
        relationships.append(
            {
                "id": rid,
                "human_readable_id": d["hid"],
                "source": title[u],
                "target": title[v],
                "description": f"{graph.nodes[u]['name']} {d['label']} {graph.nodes[v]['name']}",
                "weight": float(d["weight"]),
                "combined_degree": degree[u] + degree[v],
                "text_unit_ids": units,
            }
        )
    chunks, sid = store.chunks(), store.source_ids()
    text_units = [
        {
            "id": c.id,
            "human_readable_id": sid[c.id],
            "text": c.text,
            "n_tokens": c.n_tokens,
            "document_ids": [c.doc_id],
            "entity_ids": chunk_entities.get(c.id, []),
            "relationship_ids": chunk_edges.get(c.id, []),
            "covariate_ids": [],
        }
        for c in chunks
    ]
    communities, reports = _communities(store, graph, period)
    units_of_doc, chunks_of_doc = defaultdict(list), defaultdict(list)
    for c in chunks:
        units_of_doc[c.doc_id].append(c.id)
        chunks_of_doc[c.doc_id].append(c)
    documents = [
        {
            "id": d.id,
            "human_readable_id": n,
            "title": d.source,
            "text": d.text,
            "text_unit_ids": units_of_doc[d.id],
            "creation_date": store.manifest.get("created"),
            "metadata": _document_metadata(d, chunks_of_doc[d.id]),
        }
        for n, d in enumerate(store.documents())
    ]
    return {
        "entities": entities,
        "relationships": relationships,
        "text_units": text_units,
        "communities": communities,
        "community_reports": reports,
        "documents": documents,
    }


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
        base = {
            "id": c.id,
            "human_readable_id": n,
            "community": n,
            "level": c.level,
            "parent": number.get(c.parent, -1),
            "children": [number[x] for x in c.children],
            "title": report.title if report else f"Community {n}",
        }
        units = _chunk_ids(p for k in c.nodes for p in graph.nodes[k]["provenance"])
        rows.append(
            {
                **base,
                "entity_ids": list(c.nodes),
                "text_unit_ids": units,
                "period": period,
                "relationship_ids": [f"e{graph.edges[e]['hid']}" for e in c.edges],
                "size": len(c.nodes),
            }
        )
        if report:
            report_rows.append(
                {
                    **base,
                    "summary": report.summary,
                    "full_content": report.text(),
                    "rank": float(report.rating),
                    "rating_explanation": report.rating_explanation,
                    "findings": [asdict(f) for f in report.findings],
                    "full_content_json": json.dumps(asdict(report), ensure_ascii=False),
                    "period": period,
                    "size": len(c.nodes),
                }
            )
    return rows, report_rows


def graphrag_tables(store: IndexStore) -> dict:
    """table name -> pyarrow Table with GraphRAG's columns and types."""
    pa = require("pyarrow", "export", "Parquet export")
    schemas, rows = _schemas(pa), graphrag_rows(store)
    return {name: pa.Table.from_pylist(rows[name], schema=pa.schema(schemas[name])) for name in GRAPHRAG_TABLES}
