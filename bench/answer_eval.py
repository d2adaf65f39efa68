"""Answers of the default QueryEngine path against the same reader's answers from the gold passages.

    python -m bench.answer_eval --sets musique --half tune --limit 20 --json /tmp/a.json
    python -m bench.answer_eval --sets hotpotqa100,musique,musique_b,2wiki30 --half held-out --json out.json
    python -m bench.answer_eval --sets musique --half tune --no-model --set evidence.tokens=300   # selection only
    python -m bench.answer_eval --sets musique --half held-out --skip 25   # questions no earlier run has scored

Sets: hotpotqa100 (../shared/data/eval), bench/data/musique, musique_b and 2wiki30: multi-hop questions
over their own passages, one passage per document (bench/retrieval_eval.build_passage_index: the spaCy
extractor's graph, no reports). Halves: even positions are the tune half (settings are chosen there),
odd positions the held-out half (what RESULTS.md reports).

Modes, one reader for all (Qwen2.5-Coder-0.5B-Instruct, greedy, n_ctx 4096, the library's answer call):
- gold: the question's gold passages, whole, in the small reader's layout ("[n] Title: text") under its
  prompt, through SearchRun.answer_evidence (the same call and citation code as the modes);
- naive, local: `QueryEngine.naive_search` / `local_search` exactly as a user calls them (default
  SearchConfig, so the reader profile the library picks for this model);
- naive_large, local_large: the same with SearchConfig(reader="large"), GraphRAG's full-context path.

Before any model runs (also with --no-model), per question and mode: the context's tokens, whether the
gold answer is in it (SQuAD-normalized, as words in sequence), the share of gold passages with a kept
sentence and, on hotpotqa100, of gold supporting sentences kept (a sentence counts when its first 8
normalized words appear in sequence). So a loss can be placed: retrieval, selection or reading.

Scores: SQuAD v1.1 EM and token F1 of the answer (citations stripped), 95% percentile-bootstrap
intervals over questions (2,000 resamples, seed 0); a mode's F1 as a share of the gold mode's F1 on the
same questions, with its interval from the same resamples; median seconds per answer (the whole
search: retrieval, selection and the call) and prompt tokens.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .answers import exact_match, normalize_answer, token_f1
from .common import DATA, ROOT, dump_json

log = logging.getLogger("bench.answer_eval")

READER_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
N_CTX = 4096
SETS = {
    "hotpotqa100": DATA / "eval" / "hotpotqa100",
    "musique": ROOT / "bench" / "data" / "musique",
    "musique_b": ROOT / "bench" / "data" / "musique_b",
    "2wiki30": ROOT / "bench" / "data" / "2wiki30",
}
MODES = ("gold", "naive", "local")


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answer: str
    gold: tuple[str, ...]  # gold passage titles
    sentences: tuple[str, ...] = ()  # gold supporting sentences (hotpotqa100)


def load_set(name: str) -> tuple[list[Question], dict[str, str]]:
    folder = SETS[name]
    raw_q = json.loads((folder / "questions.json").read_text(encoding="utf-8"))
    raw_c = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    corpus = {t: " ".join(s.strip() for s in sents if s.strip()) for t, sents in raw_c.items()}
    out = []
    for q in raw_q:
        titles = tuple(dict.fromkeys(t for t, _ in q["supporting_facts"]))
        sents = ()
        if name == "hotpotqa100":
            sents = tuple(raw_c[t][i].strip() for t, i in q["supporting_facts"] if t in raw_c and i < len(raw_c[t]))
        out.append(Question(q["_id"], q["question"], q["answer"], titles, sents))
    return out, corpus


def half(questions: Sequence[Question], which: str) -> list[Question]:
    return [q for i, q in enumerate(questions) if (i % 2 == 0) == (which == "tune")]


def contains(haystack: str, needle: str, prefix: int | None = None) -> bool:
    want = normalize_answer(needle).split()[:prefix]
    return bool(want) and f" {' '.join(want)} " in f" {normalize_answer(haystack)} "


def bootstrap(values: Sequence[float], gold: Sequence[float] | None = None, n: int = 2000) -> dict[str, Any]:
    """Mean x100 with a 95% percentile interval; with `gold`, also the ratio of means and its interval."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(v), size=(n, len(v)))
    means = v[idx].mean(axis=1)
    out = {"mean": round(100 * v.mean(), 1), "ci": [round(100 * x, 1) for x in np.percentile(means, [2.5, 97.5])]}
    if gold is not None:
        g = np.asarray(gold, dtype=float)
        gm = g[idx].mean(axis=1)
        ratios = np.where(gm > 0, means / np.maximum(gm, 1e-9), np.nan)
        out["share_of_gold"] = round(100 * v.mean() / g.mean(), 1) if g.mean() > 0 else None
        out["share_ci"] = [round(100 * x, 1) for x in np.nanpercentile(ratios, [2.5, 97.5])]
    return out


class Runner:
    def __init__(self, name: str, work: Path, config, *, model: bool, cache: Path | None):
        from tiny_graphrag.search.engine import QueryEngine

        from .retrieval_eval import build_passage_index

        self.questions, corpus = load_set(name)
        self.index_dir = build_passage_index(work / f"answer-index-{name}", corpus, extractor="spacy")
        self.llm = open_reader(cache) if model else None
        self.config = config
        self.engine = QueryEngine(self.index_dir, llm=self.llm, config=config)
        store = self.engine.store
        title_of_doc = {d.id: d.source.split(":", 1)[1] for d in store.documents()}
        self.title_of_chunk = {c.id: title_of_doc[c.doc_id] for c in store.chunks()}
        self.chunk_of_title = {title_of_doc[c.doc_id]: c for c in store.chunks()}

    def ask(self, q: Question, mode: str) -> dict[str, Any]:
        from tiny_graphrag.citations import strip_citations

        only = self.llm is None
        t0 = time.perf_counter()
        if mode == "gold":
            res = self.gold(q, only)
        else:
            engine = self.engine
            if mode.endswith("_large"):
                engine = engine.configured(replace(self.config, reader="large"))
            fn = engine.naive_search if mode.startswith("naive") else engine.local_search
            res = fn(q.text, only_context=only)
        seconds = time.perf_counter() - t0
        shown = [self.title_of_chunk.get(c.chunk_id, "") for c in res.sources.chunks]
        answer = strip_citations(res.answer).strip()
        rec = {
            "context_tokens": res.context_tokens,
            "answer_in_context": contains(res.context, q.answer),
            "gold_passages": len(set(q.gold) & set(shown)) / max(1, len(q.gold)),
            "reader": res.details.get("reader"),
        }
        if q.sentences:
            rec["gold_sentences"] = sum(contains(res.context, s, 8) for s in q.sentences) / len(q.sentences)
        if not only:
            rec.update(
                raw=res.answer,
                answer=answer,
                em=exact_match(answer, q.answer),
                f1=token_f1(answer, q.answer),
                seconds=round(seconds, 2),
                prompt_tokens=res.prompt_tokens,
                cached=res.cache_hits > 0,
                notes=list(res.notes),
            )
        return rec

    def gold(self, q: Question, only: bool):
        """The gold passages, whole, through the small reader's own call (SearchRun.answer_evidence)."""
        from tiny_graphrag.search.evidence import Evidence, Sentence, passage_of, render

        engine = self.engine.configured(replace(self.config, reader="small"))
        run = engine.begin("naive", q.text, only_context=only)
        run.answer_room("")
        kept = []
        for title in q.gold:
            chunk = self.chunk_of_title[title]
            p = passage_of(chunk, engine.index.title_of(chunk))
            kept.append(Sentence(p, p.body, len(chunk.text), 1.0))
        text = render(kept)
        evidence = Evidence(text, run.counter(text), tuple(kept), tuple(kept))
        return run.answer_evidence(evidence, engine.index.sid_of, stream=False)


def open_reader(cache: Path | None):
    from tiny_graphrag.backends.files import models_dir
    from tiny_graphrag.backends.llm import open_llm
    from tiny_graphrag.config import LLMConfig
    from tiny_graphrag.index.cache import CallCache

    path = models_dir() / READER_FILE
    if not path.is_absolute():
        path = ROOT / path
    threads = int(os.environ.get("TINY_GRAPHRAG_BENCH_THREADS", "1" if os.cpu_count() == 2 else "0")) or None
    return open_llm(LLMConfig(model=str(path), n_ctx=N_CTX, n_threads=threads), cache=CallCache(cache))


def summarize(records: list[dict[str, Any]], modes: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(records)}
    for m in modes:
        rows = [r[m] for r in records]
        s: dict[str, Any] = {
            "context_tokens_median": statistics.median(r["context_tokens"] for r in rows),
            "answer_in_context": round(100 * sum(r["answer_in_context"] for r in rows) / len(rows), 1),
            "gold_passages": round(100 * sum(r["gold_passages"] for r in rows) / len(rows), 1),
        }
        if "gold_sentences" in rows[0]:
            s["gold_sentences"] = round(100 * sum(r["gold_sentences"] for r in rows) / len(rows), 1)
        if "f1" in rows[0]:
            gold = [r["gold"]["f1"] for r in records] if "gold" in modes and m != "gold" else None
            s["em"] = bootstrap([r["em"] for r in rows])
            s["f1"] = bootstrap([r["f1"] for r in rows], gold)
            s["seconds_median"] = round(statistics.median(r["seconds"] for r in rows), 2)
            s["prompt_tokens_median"] = statistics.median(r["prompt_tokens"] for r in rows)
        out[m] = s
    return out


def parse_settings(pairs: Sequence[str]):
    """SearchConfig with `section.field=value` changes (values read as JSON, else as strings)."""
    from tiny_graphrag.search.config import SearchConfig

    config = SearchConfig()
    for pair in pairs:
        key, _, raw = pair.partition("=")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if "." in key:
            section, name = key.split(".", 1)
            config = replace(config, **{section: replace(getattr(config, section), **{name: value})})
        else:
            config = replace(config, **{key: value})
    return config


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.answer_eval", description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="musique")
    p.add_argument("--half", choices=("tune", "held-out"), default="tune")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--skip", type=int, default=0, help="leave out the half's first N questions (those already used)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--set", action="append", default=[], help="a SearchConfig change, e.g. evidence.tokens=300")
    p.add_argument("--no-model", action="store_true", help="contexts and their statistics only")
    p.add_argument("--work", type=Path, default=ROOT / "bench" / "out")
    p.add_argument("--cache", type=Path, default=None, help="a model-call cache file to reuse across runs")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    config = parse_settings(args.set)
    modes = args.modes.split(",")
    args.work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "settings": args.set,
        "half": args.half,
        "skip": args.skip,
        "load_start": os.getloadavg(),
        "sets": {},
    }
    for name in args.sets.split(","):
        runner = Runner(name, args.work, config, model=not args.no_model, cache=args.cache)
        qs = half(runner.questions, args.half)[args.skip :][: args.limit]
        records = []
        for q in qs:
            rec = {"id": q.id, "question": q.text, "gold_answer": q.answer}
            for m in modes:
                rec[m] = runner.ask(q, m)
            records.append(rec)
            log.info("%s %s", q.id, {m: rec[m].get("answer") for m in modes})
        report["sets"][name] = {"summary": summarize(records, modes), "records": records}
        print(name, json.dumps(report["sets"][name]["summary"], indent=1))
    report["load_end"] = os.getloadavg()
    if args.json:
        dump_json(report, args.json)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
