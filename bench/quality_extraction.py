"""Extraction quality: entity-mention and relation-triple micro-F1 on Re-DocRED dev.

For each extractor whose model is installed (spaCy en_core_web_sm always here; GLiNER+GLiREL
when models/gliner_mediumv2.1 and models/glirel-large-v0 exist), with the dataset's entity types
(PER, ORG, LOC, TIME, NUM, MISC) and its 96 relation names as the schema. Documents are the
dataset's tokens joined by spaces, chunked and extracted as the build does (default chunking).

- entity mentions: a prediction is correct when its span is exactly a gold mention's span (token
  boundaries) and its type is that mention's type; duplicates from overlapping chunks count once.
- relation triples: (head entity, relation, tail entity) per document, entities being the gold
  entity clusters (a predicted mention maps to the cluster whose mention has exactly its span;
  an unmatched mention is an entity that is not in the gold set, so its triples are wrong).
- also, for extractors that give untyped co-occurrence links (spaCy without GLiREL), the
  unordered entity-pair P/R/F1 ignoring the label, as a diagnostic.
Per-document counts are written to the JSON, so every F1 can be recomputed from it.

spaCy's OntoNotes labels are mapped onto the dataset's types: PERSON->PER; ORG->ORG;
GPE/LOC/FAC->LOC; DATE/TIME->TIME; CARDINAL/QUANTITY/MONEY/PERCENT/ORDINAL->NUM;
NORP/EVENT/WORK_OF_ART/LAW/LANGUAGE/PRODUCT->MISC.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .common import REDOCRED, Context, rnd, stopwatch

log = logging.getLogger("bench.quality_extraction")

TYPES = ["PER", "ORG", "LOC", "TIME", "NUM", "MISC"]
SPACY_TO_DOCRED = {
    "PERSON": "PER",
    "ORG": "ORG",
    "GPE": "LOC",
    "LOC": "LOC",
    "FAC": "LOC",
    "DATE": "TIME",
    "TIME": "TIME",
    "CARDINAL": "NUM",
    "QUANTITY": "NUM",
    "MONEY": "NUM",
    "PERCENT": "NUM",
    "ORDINAL": "NUM",
    "NORP": "MISC",
    "EVENT": "MISC",
    "WORK_OF_ART": "MISC",
    "LAW": "MISC",
    "LANGUAGE": "MISC",
    "PRODUCT": "MISC",
}
COOCCURRENCE = "related to"


def load(n_docs: int) -> tuple[list[dict], dict[str, str]]:
    docs = json.loads((REDOCRED / "dev_revised.json").read_text(encoding="utf-8"))
    rel_info = json.loads((REDOCRED / "rel_info.json").read_text(encoding="utf-8"))
    return (docs[:n_docs] if n_docs else docs), rel_info


def doc_text(doc: dict) -> tuple[str, list[list[tuple[int, int]]]]:
    """Sentences of space-joined tokens, joined by a space; char offsets of every token."""
    parts, offsets, pos = [], [], 0
    for sent in doc["sents"]:
        spans = []
        for tok in sent:
            if parts:
                parts.append(" ")
                pos += 1
            spans.append((pos, pos + len(tok)))
            parts.append(tok)
            pos += len(tok)
        offsets.append(spans)
    return "".join(parts), offsets


def gold(doc: dict, offsets, rel_info: dict[str, str]) -> tuple[set, dict, set]:
    mentions = set()  # (start, end, type)
    cluster_of: dict[tuple[int, int], int] = {}  # span -> entity index
    for ei, entity in enumerate(doc["vertexSet"]):
        for m in entity:
            s, e = m["pos"]
            span = (offsets[m["sent_id"]][s][0], offsets[m["sent_id"]][e - 1][1])
            mentions.add((*span, m["type"]))
            cluster_of.setdefault(span, ei)
    triples = {(lab["h"], rel_info.get(lab["r"], lab["r"]), lab["t"]) for lab in doc.get("labels", [])}
    return mentions, cluster_of, triples


def prf(tp: int, n_pred: int, n_gold: int) -> dict[str, Any]:
    from tiny_graphrag.finetune.score import prf as micro  # the scorer of `models evaluate`

    p, r, f = micro(tp, n_pred, n_gold)
    return {
        "precision": rnd(100 * p, 1),
        "recall": rnd(100 * r, 1),
        "f1": rnd(100 * f, 1),
        "tp": tp,
        "predicted": n_pred,
        "gold": n_gold,
    }


def evaluate(extractor, docs: list[dict], rel_info: dict[str, str]) -> dict[str, Any]:
    from tiny_graphrag.config import ChunkingConfig
    from tiny_graphrag.indexing.chunking import chunk_documents
    from tiny_graphrag.records import Document

    per_doc = []
    texts = [doc_text(d) for d in docs]
    all_chunks, owner = [], []
    for i, (d, (text, _)) in enumerate(zip(docs, texts)):
        cs = chunk_documents([Document(id=f"redocred-{i}", text=text, source=d["title"])], ChunkingConfig())
        all_chunks += cs
        owner += [i] * len(cs)
    with stopwatch() as t:
        extractions = extractor.extract(all_chunks)
    pred_mentions: list[set] = [set() for _ in docs]
    pred_rels: list[set] = [set() for _ in docs]
    for chunk, ex, i in zip(all_chunks, extractions, owner):
        for m in ex.entities:
            pred_mentions[i].add((chunk.start + m.start, chunk.start + m.end, m.type))
        for r in ex.relations:
            pred_rels[i].add(
                (
                    (chunk.start + r.head.start, chunk.start + r.head.end),
                    r.label,
                    (chunk.start + r.tail.start, chunk.start + r.tail.end),
                )
            )
    tot = {
        "m_tp": 0,
        "m_pred": 0,
        "m_gold": 0,
        "r_tp": 0,
        "r_pred": 0,
        "r_gold": 0,
        "p_tp": 0,
        "p_pred": 0,
        "p_gold": 0,
    }
    for i, d in enumerate(docs):
        text, offsets = texts[i]
        g_mentions, cluster_of, g_triples = gold(d, offsets, rel_info)
        m_tp = len(pred_mentions[i] & g_mentions)
        triples = set()
        for h, lab, tl in pred_rels[i]:
            hc = cluster_of.get(h, ("unmatched",) + h)
            tc = cluster_of.get(tl, ("unmatched",) + tl)
            if hc != tc:
                triples.add((hc, lab, tc))
        r_tp = len(triples & g_triples)
        pairs = {frozenset((h, t)) for h, _, t in triples}
        g_pairs = {frozenset((h, t)) for h, _, t in g_triples if h != t}
        p_tp = len(pairs & g_pairs)
        row = {
            "title": d["title"],
            "mentions": [m_tp, len(pred_mentions[i]), len(g_mentions)],
            "triples": [r_tp, len(triples), len(g_triples)],
            "pairs": [p_tp, len(pairs), len(g_pairs)],
        }
        per_doc.append(row)
        for key, (a, b, c) in (("m", row["mentions"]), ("r", row["triples"]), ("p", row["pairs"])):
            tot[f"{key}_tp"] += a
            tot[f"{key}_pred"] += b
            tot[f"{key}_gold"] += c
    return {
        "entity": prf(tot["m_tp"], tot["m_pred"], tot["m_gold"]),
        "relation": prf(tot["r_tp"], tot["r_pred"], tot["r_gold"]),
        "entity_pair_unlabeled": prf(tot["p_tp"], tot["p_pred"], tot["p_gold"]),
        "chunks": len(all_chunks),
        "extract_seconds": rnd(t["s"], 1),
        "per_document": per_doc,  # [tp, predicted, gold] per document
    }


def run(ctx: Context) -> dict[str, Any]:
    from tiny_graphrag.backends.files import resolve_model
    from tiny_graphrag.config import ExtractionConfig
    from tiny_graphrag.errors import ModelNotFoundError
    from tiny_graphrag.extract.base import make_extractor
    from tiny_graphrag.schema import Schema

    docs, rel_info = load(ctx.mode.redocred_docs)
    relation_names = sorted(set(rel_info.values()))
    schema = Schema.from_dict(
        {
            "name": "redocred",
            "entity_types": TYPES,
            "relation_types": {name: {} for name in relation_names + [COOCCURRENCE]},
        }
    )
    out: dict[str, Any] = {"documents": len(docs), "relation_types": len(relation_names), "extractors": {}}

    # spaCy NER + sentence co-occurrence (GLiREL when its model is installed)
    from .common import NO_GLIREL

    try:
        resolve_model("glirel-large-v0", kind="glirel")
        glirel = "glirel-large-v0"
    except ModelNotFoundError:
        glirel = NO_GLIREL
    ex = make_extractor(
        schema, ExtractionConfig(extractor="spacy", spacy_label_map=SPACY_TO_DOCRED, glirel_model=glirel)
    )
    res = evaluate(ex, docs, rel_info)
    res["relations_from"] = getattr(ex, "relation_method", "?")
    if res["relations_from"] == "cooccurrence":
        res["note"] = (
            f"relations are sentence co-occurrence links labelled '{COOCCURRENCE}', which is not a "
            "Re-DocRED relation: labelled relation F1 is 0 by construction; see entity_pair_unlabeled"
        )
    out["extractors"]["spacy:en_core_web_sm"] = res

    try:
        resolve_model("gliner_mediumv2.1", kind="gliner")
        resolve_model("glirel-large-v0", kind="glirel")
    except ModelNotFoundError as exc:
        out["extractors"]["gliner:gliner_mediumv2.1+glirel-large-v0"] = (
            f"skipped: model not installed ({exc.args[0][:120]}...)"
        )
    else:
        ex = make_extractor(schema, ExtractionConfig(extractor="gliner"))
        out["extractors"]["gliner:gliner_mediumv2.1+glirel-large-v0"] = evaluate(ex, docs, rel_info)
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("data", f"Re-DocRED dev, {r['documents']} documents, {r['relation_types']} relation types")]
    for name, res in r["extractors"].items():
        if not isinstance(res, dict):
            rows.append((name, res))
            continue
        e, rel, pair = res["entity"], res["relation"], res["entity_pair_unlabeled"]
        rows.append(
            (
                f"{name} entity mentions",
                f"P {e['precision']} R {e['recall']} F1 {e['f1']} ({e['predicted']} predicted, {e['gold']} gold)",
            )
        )
        rows.append(
            (
                f"{name} relation triples",
                f"P {rel['precision']} R {rel['recall']} F1 {rel['f1']} (relations from {res['relations_from']})",
            )
        )
        rows.append((f"{name} entity pairs, unlabeled", f"P {pair['precision']} R {pair['recall']} F1 {pair['f1']}"))
    return rows
