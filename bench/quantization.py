"""int8 dynamic quantization against fp32: do the predictions agree? (`python -m bench --only quantization`)

Speed does not depend on the weights, agreement does: random weights score every span near 0.5,
so a tiny shift flips many of them. The entity side is therefore measured on a tiny GLiNER
trained for a few hundred steps on template sentences (tests/devmodels.py; it then tags the
obvious people, organisations and places), on held-out sentences of the same templates and on
the Obama sample. No trained GLiREL can be built offline: its agreement is measured on the
random-weight one, given the same (fp32) mentions, and says only how much int8 moves its scores.
The speed of int8 is measured on the real architectures in bench/extraction.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .common import Context, cut_text, obama_text, rnd, stopwatch

TRAIN_STEPS = 300


def f1(reference: set, other: set) -> float | None:
    """Agreement of two prediction sets: 2|A∩B| / (|A| + |B|) (1.0 = the same predictions)."""
    if not reference and not other:
        return None
    return 2 * len(reference & other) / (len(reference) + len(other))


def agreement(ref: Sequence, other: Sequence) -> dict[str, Any]:
    """Entity (span, type) and relation (head span, tail span, label) agreement of two extraction
    lists of the same chunks, and the largest score difference among shared predictions."""
    ents_a = {(r.chunk_id, m.start, m.end, m.type): m.score for r in ref for m in r.entities}
    ents_b = {(r.chunk_id, m.start, m.end, m.type): m.score for r in other for m in r.entities}
    rels_a = {
        (r.chunk_id, x.head.start, x.head.end, x.tail.start, x.tail.end, x.label): x.score
        for r in ref
        for x in r.relations
    }
    rels_b = {
        (r.chunk_id, x.head.start, x.head.end, x.tail.start, x.tail.end, x.label): x.score
        for r in other
        for x in r.relations
    }
    shared = [abs(ents_a[k] - ents_b[k]) for k in ents_a.keys() & ents_b.keys()]
    shared_r = [abs(rels_a[k] - rels_b[k]) for k in rels_a.keys() & rels_b.keys()]
    return {
        "entities_ref": len(ents_a),
        "entities_other": len(ents_b),
        "entity_agreement_f1": rnd(f1(set(ents_a), set(ents_b)), 4),
        "relations_ref": len(rels_a),
        "relations_other": len(rels_b),
        "relation_agreement_f1": rnd(f1(set(rels_a), set(rels_b)), 4),
        "max_entity_score_diff": rnd(max(shared, default=0.0), 5),
        "max_relation_score_diff": rnd(max(shared_r, default=0.0), 5),
    }


def held_out_sentences(n: int, seed: int = 12345) -> list[str]:
    """Template sentences drawn with another seed than the training's."""
    from tests import devmodels

    rng = random.Random(seed)
    return [" ".join(devmodels._template_example(rng)["tokenized_text"]) for _ in range(n)]


def run(ctx: Context) -> dict[str, Any]:
    from tests import devmodels
    from tiny_graphrag.config import ChunkingConfig, ExtractionConfig
    from tiny_graphrag.extract.gliner import GlinerGlirelExtractor, clear_model_cache
    from tiny_graphrag.indexing.chunking import chunk_documents
    from tiny_graphrag.indexing.documents import document_from_text
    from tiny_graphrag.records import Chunk, Extraction
    from tiny_graphrag.schema import Schema

    folder = ctx.work.parent / "models"
    gliner, glirel = folder / f"gliner-tiny-trained{TRAIN_STEPS}", folder / "glirel-tiny-random"
    with stopwatch() as t_train:
        if not (gliner / ".complete").exists():
            devmodels.build_tiny_gliner(gliner, seed=0, train_steps=TRAIN_STEPS)
            (gliner / ".complete").write_text("ok")
        if not (glirel / ".complete").exists():
            devmodels.build_tiny_glirel(glirel, seed=0)
            (glirel / ".complete").write_text("ok")
    schema = Schema.preset("general")
    sentences = held_out_sentences(200)
    texts = {
        "templates (held out)": [" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4)],
        "obama sample": [
            c.text
            for c in chunk_documents(
                [document_from_text(cut_text(obama_text(), 1500), source="obama")], ChunkingConfig(max_tokens=64)
            )
        ],
    }
    out: dict[str, Any] = {
        "gliner": f"tiny BERT (32x2) trained {TRAIN_STEPS} steps on template sentences",
        "glirel": "tiny BERT (32x2), random weights",
        "train_seconds": rnd(t_train["s"], 1),
    }
    fp32, int8 = (
        GlinerGlirelExtractor(
            schema, ExtractionConfig(gliner_model=str(gliner), glirel_model=str(glirel), device="cpu", quantize=q)
        )
        for q in (None, "int8")
    )
    for name, chunk_texts in texts.items():
        chunks = [
            Chunk(id=f"c{i}", doc_id="d", index=i, text=t, start=0, end=len(t), n_tokens=len(t.split()))
            for i, t in enumerate(chunk_texts)
        ]
        a, b = fp32.extract(chunks), int8.extract(chunks)
        res = agreement(a, b)
        # GLiREL alone: both read the fp32 mentions, so only its own quantization differs.
        mentions = [list(x.entities) for x in a]
        rel_fp32 = fp32.relations.predict(chunk_texts, mentions)
        rel_int8 = int8.relations.predict(chunk_texts, mentions)
        as_ex = [
            [Extraction(c.id, tuple(m), tuple(r)) for c, m, r in zip(chunks, mentions, rels)]
            for rels in (rel_fp32, rel_int8)
        ]
        glirel_only = agreement(*as_ex)
        res["glirel_only_relation_agreement_f1"] = glirel_only["relation_agreement_f1"]
        res["glirel_only_max_relation_score_diff"] = glirel_only["max_relation_score_diff"]
        res["chunks"] = len(chunks)
        out[name] = res
    clear_model_cache()
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("models", f"GLiNER: {r['gliner']}; GLiREL: {r['glirel']}")]
    for name in ("templates (held out)", "obama sample"):
        x = r[name]
        rows.append(
            (
                f"int8 vs fp32, {name}",
                f"entities {x['entities_ref']}/{x['entities_other']}, agreement F1 {x['entity_agreement_f1']} "
                f"(max score diff {x['max_entity_score_diff']}); relations F1 {x['relation_agreement_f1']}; "
                f"GLiREL alone F1 {x['glirel_only_relation_agreement_f1']}",
            )
        )
    return rows
