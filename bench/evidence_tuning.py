"""The small reader's evidence settings, chosen on tune halves without a model call.

    python -m bench.evidence_tuning --sets hotpotqa100,musique --json out.json

For each tune-half question the passages naive and local search rank are fixed once; each setting of
EvidenceConfig then selects sentences from them (sentence vectors are embedded once and reused), and
is scored by what it keeps before any model reads it: the share of questions whose gold answer is in
the evidence (as words in sequence) and the share of gold passages with a kept sentence, at the
evidence's budget. Coordinate ascent from the defaults over one field at a time, the objective being
the answer's presence averaged over the sets and both modes (gold passages break ties); the budget
itself is not chosen here (more tokens always keep more): bench.answer_eval measures it with the reader.
The chosen setting is then reported on the held-out halves, with the same statistics.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .answer_eval import contains, half, load_set
from .common import ROOT, dump_json

log = logging.getLogger("bench.evidence_tuning")

GRID: dict[str, Sequence[Any]] = {
    "passages": (4, 6, 8, 12, 16),
    "lexical_weight": (0.0, 0.15, 0.3, 0.6, 1.0),
    "prior_weight": (0.0, 0.05, 0.1, 0.2, 0.4),
    "second_hop": (False, True),
    "hop_weight": (0.7, 0.8, 0.9, 1.0),
    "hop_passages": (0, 2, 3, 5),
    "min_share": (0.0, 0.3, 0.5, 0.7),
}


class Fixed:
    """One set's questions with the passages each mode ranks for them, fixed once."""

    def __init__(self, name: str, which: str, work: Path):
        from tiny_graphrag.search.engine import QueryEngine

        from .retrieval_eval import build_passage_index

        questions, corpus = load_set(name)
        self.questions = half(questions, which)
        self.engine = QueryEngine(build_passage_index(work / f"answer-index-{name}", corpus, extractor="spacy"))
        index = self.engine.index
        title_of_doc = {d.id: d.source.split(":", 1)[1] for d in self.engine.store.documents()}
        self.title_of_chunk = {c.id: title_of_doc[c.doc_id] for c in self.engine.store.chunks()}
        self.ranked: dict[str, list[tuple[Any, list]]] = {"naive": [], "local": []}
        cfg = self.engine.config
        for q in self.questions:
            qvec = index.embed_query(q.text)
            naive = index.hybrid.rank(q.text, qvec).ids("fused")[:20]
            cand = index.local.retrieve(q.text, qvec, cfg.local, cfg.fusion)
            local = [c for c, _ in cand.chunks[:20]]
            self.ranked["naive"].append((qvec, index.store.chunks_by_id(naive)))
            self.ranked["local"].append((qvec, index.store.chunks_by_id(local)))

    def score(self, config, budget: int) -> dict[str, float]:
        from tiny_graphrag.search.evidence import select_evidence
        from tiny_graphrag.search.tokens import FALLBACK

        index = self.engine.index
        out: dict[str, float] = {}
        for mode, rows in self.ranked.items():
            present = passages = 0.0
            for q, (qvec, chunks) in zip(self.questions, rows):
                ev = select_evidence(
                    q.text,
                    qvec,
                    chunks,
                    title_of=index.title_of,
                    embed=index.embed_texts,
                    count=FALLBACK,
                    budget=budget,
                    config=config,
                    more=index.passages_for,
                )
                present += contains(ev.text, q.answer)
                kept = {self.title_of_chunk[c.id] for c in ev.chunks}
                passages += len(kept & set(q.gold)) / max(1, len(q.gold))
            out[f"{mode}_answer"] = round(100 * present / len(self.questions), 1)
            out[f"{mode}_gold_passages"] = round(100 * passages / len(self.questions), 1)
        return out


def objective(scores: dict[str, dict[str, float]]) -> tuple[float, float]:
    answer = [v for s in scores.values() for k, v in s.items() if k.endswith("_answer")]
    gold = [v for s in scores.values() for k, v in s.items() if k.endswith("_gold_passages")]
    return sum(answer) / len(answer), sum(gold) / len(gold)


def main(argv: Sequence[str] | None = None) -> int:
    from tiny_graphrag.search.config import EvidenceConfig

    p = argparse.ArgumentParser(prog="python -m bench.evidence_tuning", description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="hotpotqa100,musique")
    p.add_argument("--budget", type=int, default=EvidenceConfig().tokens)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--work", type=Path, default=ROOT / "bench" / "out")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    tune = {n: Fixed(n, "tune", args.work) for n in args.sets.split(",")}
    config = EvidenceConfig()
    trail = []

    def evaluate(c: EvidenceConfig) -> tuple[tuple[float, float], dict[str, dict[str, float]]]:
        scores = {n: f.score(c, args.budget) for n, f in tune.items()}
        return objective(scores), scores

    best, best_scores = evaluate(config)
    trail.append({"config": vars(config).copy(), "objective": best, "scores": best_scores})
    for _ in range(args.rounds):
        moved = False
        for field, values in GRID.items():
            for v in values:
                if getattr(config, field) == v:
                    continue
                cand = replace(config, **{field: v})
                obj, scores = evaluate(cand)
                trail.append({"config": vars(cand).copy(), "objective": obj, "scores": scores})
                log.info("%s=%s: %s", field, v, obj)
                if obj > best:
                    best, best_scores, config, moved = obj, scores, cand, True
        if not moved:
            break
    held = {n: Fixed(n, "held-out", args.work) for n in args.sets.split(",")}
    report = {
        "budget": args.budget,
        "chosen": vars(config).copy(),
        "tune": best_scores,
        "held_out": {n: f.score(config, args.budget) for n, f in held.items()},
        "held_out_defaults": {n: f.score(EvidenceConfig(), args.budget) for n, f in held.items()},
        "trail": trail,
    }
    print({k: report[k] for k in ("chosen", "tune", "held_out", "held_out_defaults")})
    if args.json:
        dump_json(report, args.json)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
