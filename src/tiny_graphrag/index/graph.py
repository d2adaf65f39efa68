"""The knowledge graph: typed entity nodes and labelled relation edges, plus safe persistence.

Node and edge attributes are a contract read by resolution, communities, reports and search:

node (key = ``normalize_name(surface)``)
    name          display name: most frequent surface form (ties: first seen)
    type          majority vote over mentions (ties: first seen)
    type_votes    dict type -> number of mentions voting for it
    type_conflict True when more than one type was voted
    mentions      number of distinct mentions (== len(provenance))
    provenance    list of (doc_id, chunk_id, start, end), document-level offsets
    aliases       distinct surface forms, first seen first
    hid           a small number derived from the key (records.short_ids; citations use it)

edge (one per (head, tail, label); multigraph key = label)
    label, score (max model score), weight (number of supporting mentions == len(provenance)),
    provenance (doc_id, chunk_id, start, end) spanning both mentions, document-level, hid (from (head, tail, label))

graph.graph: schema (Schema.to_dict()), merges (list of merge records, see merge.py), type_conflicts (key -> {"chosen",
"votes"}), dropped_relations (reason -> count), dropped_entities (reason -> count)."""

from __future__ import annotations

import logging
import os
import pickle
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from tiny_graphrag.errors import IndexFormatError
from tiny_graphrag.records import Chunk, EntityMention, Extraction, short_ids
from tiny_graphrag.schema import Schema

log = logging.getLogger(__name__)

Span = tuple[str, str, int, int]  # (doc_id, chunk_id, start, end), document-level offsets

# Apostrophe look-alikes become ASCII so "Obama’s" and "Obama's" share a key.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "\uff07": "'"})
# Stripped from either end. Not '#', '+', '&', '%', '$', '@': they are part of names (C#, C++, AT&T).
_EDGE = set("\"'`,;:!?¡¿…·•*_/\\|~")
# Only trailing: a leading '.' belongs to names such as ".NET"; a trailing one ends a sentence.
_TRAIL_ONLY = set(".")
_POSSESSIVE = re.compile(r"(?<=\w)'s$")


def normalize_name(text: str) -> str:
    """The node key of a surface form; "" when nothing name-like is left (callers skip it)."""
    s = unicodedata.normalize("NFKC", text)
    s = "".join(ch for ch in s if unicodedata.category(ch) != "Cf")  # zero-width chars, soft hyphens
    s = unicodedata.normalize("NFKC", s.translate(_APOSTROPHES).casefold())
    s = " ".join(s.split())
    previous = None
    while s != previous:  # '"Obama's."' needs punctuation, possessive and punctuation again
        previous = s
        s = _POSSESSIVE.sub("", _strip_edges(s)).rstrip()
    return s


def _strip_edges(s: str) -> str:
    while s:
        first, last = s[0], s[-1]
        cat_first, cat_last = unicodedata.category(first), unicodedata.category(last)
        if first in _EDGE or cat_first in ("Pi", "Pf", "Pd"):
            s = s[1:].lstrip()
        elif last in _EDGE or last in _TRAIL_ONLY or cat_last in ("Pi", "Pf", "Pd"):
            s = s[:-1].rstrip()
        elif cat_first == "Ps" and _matching_close(s) in (len(s) - 1, -1):
            # "(UN)" is wrapped, "(UN" is unbalanced: both lose the bracket; "Apple (company)" keeps it.
            s = s[1:].lstrip()
        elif cat_last == "Pe" and s.count(last) > sum(unicodedata.category(c) == "Ps" for c in s):
            s = s[:-1].rstrip()
        else:
            break
    return s


def _matching_close(s: str) -> int:
    """Index of the bracket closing s[0], or -1 when it is never closed."""
    depth = 0
    for i, ch in enumerate(s):
        cat = unicodedata.category(ch)
        if cat == "Ps":
            depth += 1
        elif cat == "Pe":
            depth -= 1
            if depth == 0:
                return i
    return -1


@dataclass
class _NodeAcc:
    surfaces: Counter = field(default_factory=Counter)  # insertion order breaks ties: first seen
    votes: Counter = field(default_factory=Counter)
    provenance: list[Span] = field(default_factory=list)


def build_graph(chunks: Sequence[Chunk], extractions: Sequence[Extraction], schema: Schema) -> nx.MultiDiGraph:
    """The typed knowledge graph of the extractions; relations the schema forbids are dropped."""
    by_id = {c.id: c for c in chunks}
    types = set(schema.entity_types)
    nodes: dict[str, _NodeAcc] = {}
    seen_spans: set[tuple[str, int, int]] = set()  # overlapping chunks report one mention twice
    dropped_entities: Counter = Counter()
    warned_offsets = False

    def add_mention(chunk: Chunk, m: EntityMention) -> str:
        nonlocal warned_offsets
        key = normalize_name(m.text)
        if not key:
            dropped_entities["empty_name"] += 1
            return ""
        if m.type not in types:
            dropped_entities["unknown_type"] += 1
            return key
        if not warned_offsets and chunk.text[m.start : m.end] != m.text:
            warned_offsets = True
            log.warning("mention %r does not match its offsets in chunk %s; provenance may be off", m.text, chunk.id)
        span = (chunk.doc_id, chunk.start + m.start, chunk.start + m.end)
        if span in seen_spans:
            return key
        seen_spans.add(span)
        acc = nodes.setdefault(key, _NodeAcc())
        acc.surfaces[" ".join(m.text.split())] += 1
        acc.votes[m.type] += 1
        acc.provenance.append((chunk.doc_id, chunk.id, span[1], span[2]))
        return key

    # Relations are kept as mentions until node types are final, then checked against the schema.
    pending: dict[tuple, tuple[float, Span]] = {}
    for ex in extractions:
        if (chunk := by_id.get(ex.chunk_id)) is None:
            raise ValueError(f"extraction refers to chunk {ex.chunk_id!r}, which is not among the chunks given")
        for m in ex.entities:
            add_mention(chunk, m)
        for r in ex.relations:
            # Endpoints count as mentions too: an extractor may relate spans it did not list.
            head, tail = add_mention(chunk, r.head), add_mention(chunk, r.tail)
            starts = (chunk.start + r.head.start, chunk.start + r.tail.start)  # document-level offsets
            ends = (chunk.start + r.head.end, chunk.start + r.tail.end)
            ident = (head, tail, r.label, chunk.doc_id, *starts, *ends)
            span = (chunk.doc_id, chunk.id, min(starts), max(ends))
            # The same relation seen again in an overlapping chunk keeps its first span and best score.
            score, span = pending.get(ident, (float(r.score), span))
            pending[ident] = (max(score, float(r.score)), span)

    graph: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    type_conflicts: dict[str, dict[str, Any]] = {}
    for key, acc in nodes.items():
        node_type = max(acc.votes, key=acc.votes.__getitem__)  # max keeps the first of equal counts
        conflict = len(acc.votes) > 1
        if conflict:
            type_conflicts[key] = {"chosen": node_type, "votes": dict(acc.votes)}
        graph.add_node(
            key,
            name=max(acc.surfaces, key=acc.surfaces.__getitem__),
            type=node_type,
            type_votes=dict(acc.votes),
            type_conflict=conflict,
            mentions=len(acc.provenance),
            provenance=list(acc.provenance),
            aliases=list(acc.surfaces),
        )

    dropped: Counter = Counter()
    for (head, tail, label, *_), (score, span) in pending.items():
        if reason := _drop_reason(graph, schema, head, tail, label):
            dropped[reason] += 1
            continue
        if graph.has_edge(head, tail, key=label):
            data = graph.edges[head, tail, label]
            data["score"] = max(data["score"], score)
            data["weight"] += 1
            data["provenance"].append(span)
        else:
            graph.add_edge(head, tail, key=label, label=label, score=score, weight=1, provenance=[span])

    graph.graph.update(
        schema=schema.to_dict(),
        merges=[],
        type_conflicts=type_conflicts,
        dropped_relations=dict(dropped),
        dropped_entities=dict(dropped_entities),
    )
    if dropped:
        log.info("dropped %d relation mention(s): %s", sum(dropped.values()), dict(dropped))
    if type_conflicts:
        log.info("%d entit(ies) were given more than one type; the majority type was kept", len(type_conflicts))
    assign_hids(graph)
    return graph


def _drop_reason(graph: nx.MultiDiGraph, schema: Schema, head: str, tail: str, label: str) -> str:
    if not head or not tail:
        return "empty_name"
    if head not in graph or tail not in graph:
        return "unknown_entity"  # an endpoint whose every mention had a type outside the schema
    if head == tail:
        return "self_loop"
    if schema.relation(label) is None:
        return "unknown_label"
    return "" if schema.allows(label, graph.nodes[head]["type"], graph.nodes[tail]["type"]) else "type_constraint"


def node_chunks(graph: nx.MultiDiGraph, node: str) -> list[str]:
    """The chunks naming `node`, first seen first (from its provenance)."""
    return list(dict.fromkeys(p[1] for p in graph.nodes[node].get("provenance") or () if len(p) > 1))


def assign_hids(graph: nx.MultiDiGraph) -> None:
    """Give nodes and edges content-derived hids, and store them in sorted key order.

    A hid depends on its key only (not on a position), so documents added elsewhere leave it unchanged and unchanged
    report prompts hit the cache. Rebuilding the storage order makes everything downstream (communities, reports) see
    the same order whether or not merges happened."""
    nodes = sorted(graph.nodes(data=True), key=lambda n: n[0])
    edges = sorted(graph.edges(keys=True, data=True), key=lambda e: (e[0], e[1], e[2]))
    node_hids = short_ids(key for key, _ in nodes)
    edge_hids = short_ids((u, v, k) for u, v, k, _ in edges)
    meta = dict(graph.graph)
    graph.clear()  # also empties graph.graph, restored below
    graph.graph.update(meta)
    for key, data in nodes:
        data["hid"] = node_hids[key]
        graph.add_node(key, **data)
    for u, v, k, data in edges:
        data["hid"] = edge_hids[(u, v, k)]
        graph.add_edge(u, v, key=k, **data)


_REBUILD = "Rebuild the index with `tiny-graphrag build`"
_CORE_STATE = ("graph", "_node", "_adj", "_succ", "_pred")

# Everything a saved graph may reference. save_graph writes only the graph class and builtins; the other graph classes
# and the cached view classes are allowed so a plain pickle.dump of a graph still loads (views hold no code) and a wrong
# graph class gets a clear "not a MultiDiGraph" error instead of a tampering one.
_ALLOWED: frozenset[tuple[str, str]] = frozenset(
    [(f"networkx.classes.{n.lower()}", n) for n in ("MultiDiGraph", "DiGraph", "MultiGraph", "Graph")]
    + [("networkx.classes.coreviews", n) for n in ("AtlasView", "AdjacencyView", "MultiAdjacencyView")]
    + [
        ("networkx.classes.reportviews", n)
        for n in """NodeView EdgeView OutEdgeView InEdgeView MultiEdgeView OutMultiEdgeView InMultiEdgeView DegreeView
        DiDegreeView InDegreeView OutDegreeView MultiDegreeView DiMultiDegreeView InMultiDegreeView
        OutMultiDegreeView""".split()
    ]
    + [("builtins", n) for n in "dict list tuple set frozenset str int float bool complex bytes NoneType".split()]
)


class _GraphPickler(pickle.Pickler):
    """Writes a MultiDiGraph as its core dicts only, and refuses what the loader would refuse."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is nx.MultiDiGraph:
            # Cached views (g.nodes, g.edges...) are rebuilt on demand; don't store them.
            state = {name: obj.__dict__[name] for name in _CORE_STATE}
            state["__networkx_cache__"] = {}
            return (nx.MultiDiGraph, (), state)
        if isinstance(obj, type):  # a class named by a reduce tuple, e.g. float or MultiDiGraph
            if (obj.__module__, obj.__qualname__) in _ALLOWED:
                return NotImplemented
            raise TypeError(f"cannot save the graph: it holds the class {obj.__module__}.{obj.__qualname__}")
        cls = type(obj)
        if cls.__module__ == "numpy" and hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:
            value = obj.item()  # numpy scalars (model scores) are saved as Python numbers
            return (type(value), (value,))
        if (cls.__module__, cls.__qualname__) in _ALLOWED:
            return NotImplemented
        raise TypeError(
            f"cannot save the graph: it holds a {cls.__module__}.{cls.__qualname__} ({obj!r:.80}); graph, node "
            "and edge attributes must be plain Python values (str, int, float, bool, None, list, tuple, dict, set)"
        )


def save_graph(graph: nx.MultiDiGraph, path: str | os.PathLike[str]) -> None:
    """Pickle the graph atomically: a reader sees the old file or the new one, never half of one."""
    if type(graph) is not nx.MultiDiGraph:
        raise TypeError(f"save_graph expects a networkx.MultiDiGraph, got {type(graph).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Opened as the index's other files are, so the umask sets its mode: mkstemp's 0600 kept other users out.
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            _GraphPickler(fh, protocol=5).dump(graph)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class _RefusedGlobal(Exception):
    """A class outside _ALLOWED; its message is module.name."""


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the classes a tiny-graphrag graph is made of; anything else is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise _RefusedGlobal(f"{module}.{name}")
        return super().find_class(module, name)


def load_graph(path: str | os.PathLike[str]) -> nx.MultiDiGraph:
    """Load a graph written by save_graph without ever running code the file names."""
    path = Path(path)
    if not path.is_file():
        raise IndexFormatError(f"graph file {path} does not exist. {_REBUILD}")
    try:
        with path.open("rb") as fh:
            graph = _RestrictedUnpickler(fh).load()
    except _RefusedGlobal as exc:
        raise IndexFormatError(
            f"{path}: refused to load: the pickle references {exc}, which a tiny-graphrag graph never contains; "
            f"the file may have been tampered with. {_REBUILD}"
        ) from None
    except Exception as exc:  # truncated or corrupt: EOFError, UnpicklingError, ValueError, ...
        raise IndexFormatError(
            f"{path} is truncated or corrupt and cannot be read as a graph ({type(exc).__name__}: {exc}). {_REBUILD}"
        ) from exc
    if type(graph) is not nx.MultiDiGraph:
        raise IndexFormatError(
            f"{path} does not hold a tiny-graphrag graph: it holds a {type(graph).__name__}, "
            f"not a networkx MultiDiGraph. {_REBUILD}"
        )
    state = graph.__dict__
    if not all(isinstance(state.get(name), dict) for name in _CORE_STATE) or state["_succ"] is not state["_adj"]:
        raise IndexFormatError(f"{path} holds an incomplete graph (its adjacency data is missing). {_REBUILD}")
    state.setdefault("__networkx_cache__", {})
    return graph
