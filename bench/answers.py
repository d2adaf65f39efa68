"""End-to-end answer quality on hotpotqa100: one reader, one answer prompt, one context budget.

    python -m bench --only answers            # the held-out half (50 questions); also part of --full
    python -m bench.answers --half tune --limit 10 --modes oracle --prompt terse --json /tmp/t.json   # iterate
    python -m bench.answers --shard 0/2 --json a.json & python -m bench.answers --shard 1/2 --json b.json
    python -m bench.answers --merge a.json b.json --json merged.json   # shards run in parallel, then joined

Modes (the same reader, greedy, and the same answer prompt, `prompts.answer_messages`, and answer grammar,
`prompts.answer_grammar`, for all):
- closed_book: the answer prompt with no data (the data section is empty);
- oracle: the question's gold passages as the same "-----Sources-----" table naive search builds;
- naive / local: `QueryEngine.naive_search` / `local_search` as a user calls them, with
  `SearchConfig(context_tokens=BUDGET)`, so each context holds at most BUDGET tokens;
- global: `global_search` on a stated subset (GLOBAL_QUESTIONS) of an index whose top-level
  community reports were written by the extractive stand-in (bench/standin.py), map calls pre-filtered to the
  GLOBAL_PREFILTER reports most similar to the question, each map batch and the reduce context
  within BUDGET tokens. Reports for the 994-passage graph from the 0.5B reader would take many
  hours on 2 CPU cores; the stand-in copies the passages' text into the report schema, so global
  search here measures the map/reduce answer path over report-shaped text, not a model's reports.
- map probe (the global subset): the map step alone, once on a batch of reports relevant to the
  question (their community holds an entity mentioned in a gold passage) and once on as many
  randomly chosen irrelevant ones: how often each gets a point scored above 0.

Scoring: the answer's first line, citations stripped (`citations.strip_citations`), an "Answer:"
label dropped, against the gold answer with the SQuAD v1.1 normalization (lowercase, punctuation
and the articles a/an/the removed, whitespace collapsed): exact match and token F1, averaged over
questions, with 95% percentile-bootstrap intervals over questions and paired differences between
modes (retrieval_eval.bootstrap_interval: 2,000 resamples, seed 0). Every prediction is in the JSON.

Halves: the questions at even positions (0, 2, ...) are the tuning half (prompts were chosen on
it), the odd positions the held-out half, on which the section reports. Model calls go through a
CallCache: TINY_GRAPHRAG_ANSWERS_CACHE names a file to reuse across runs (identical prompts replay,
the JSON counts calls made and replayed); by default the cache is fresh in the run's work folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import string
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .common import HOTPOT, ROOT, Context, dump_json, rnd

log = logging.getLogger("bench.answers")

READER_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
# One context budget for every mode. A 0.5B reader loses the answer in long contexts (F1 with
# ~3,300 retrieved tokens was far below F1 with the two gold passages), so the budget is small:
# room for the two gold passages (~240 tokens together) and about four more passages. Not tuned:
# set before any measurement (a sweep costs more model time than these 2 cores had).
BUDGET = 800
N_CTX = 4096
ANSWER_MAX_TOKENS = 48  # a few words and a citation; also bounds a rambling answer's cost
GLOBAL_QUESTIONS = 4  # held-out questions that also run global search (~3 model calls each)
# map calls per global question (GlobalConfig.dynamic_map_calls; before issue 32: the 2 nearest reports)
GLOBAL_MAP_CALLS = 1
MAP_PROBE_REPORTS = 2  # relevant reports in the map probe's first batch
MODES = ("closed_book", "oracle", "naive", "local")
LADDER = (
    ("naive", "closed_book"),
    ("local", "naive"),
    ("oracle", "local"),
    ("oracle", "naive"),
    ("local", "closed_book"),
    ("oracle", "closed_book"),
)
CACHE_ENV = "TINY_GRAPHRAG_ANSWERS_CACHE"

# The answer prompt before this section existed, and the candidates tried on the tuning half
# (`--prompt NAME`), kept to show what the chosen one ("new": the library's) buys.
PROMPT_VARIANTS: dict[str, tuple[str, str]] = {
    "before": (
        "You are a careful assistant. You answer questions using only the data tables you are given. "
        "If the data does not contain the answer, say that you do not know; never make anything up.",
        """---Data tables---
{context}
---End of data---

Answer the question below using only the data above. Keep the answer short. After each statement, cite its evidence as {citations}, using only ids that appear in the data tables above (at most 5 ids per citation; add "+more" when there are more). If the data does not answer the question, say so.

Question: {query}
""",
    ),
    "bullets": (  # the first candidate: answer-first rules as a list after the question
        "You answer questions using only the data you are given. Your answers are short and exact.",
        """---Data---
{context}
---End of data---

Question: {query}

Answer the question using only the data above.
- First write the answer itself in a few words (a name, a place, a date, a number, or yes/no), not a sentence.
- Then cite the ids of the rows that support it, as {citations}.
- If the data does not contain the answer, write only: The context does not say.
""",
    ),
    "example": (
        "You answer questions using only the data you are given. Your answers are short and exact.",
        """---Data---
{context}
---End of data---

Use only the data above. Give the answer in a few words, then cite the ids of the rows that support it as {citations}. For example, to "In which country is the city of Lyon?" answer: France [Data: Sources (12)]
If the data does not contain the answer, write: The context does not say.

Question: {query}
Answer:""",
    ),
    "terse": (
        "You answer questions using only the data you are given. Your answers are short and exact.",
        """---Data---
{context}
---End of data---

Question: {query}

Reply with the answer only, in at most five words (a name, a place, a date, a number, or yes/no), then the ids of the rows you used, as {citations}. If no row of the data answers the question, reply: The context does not say.
Answer:""",
    ),
}


# ---- metric (SQuAD v1.1 evaluation script) ------------------------------------------------------
def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace (in that order)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*", re.IGNORECASE)
_ABSTAIN = re.compile(
    r"context does not say|do(?:es)? not (?:know|contain|say|mention|provide)|not (?:mentioned|provided)"
    r"|no information|cannot be determined|not enough information",
    re.IGNORECASE,
)


def extract_answer(text: str) -> str:
    """What is scored: the first non-empty line, citations stripped, an "Answer:" label dropped.

    The prompt asks for the answer first and citations after it, so the first line is the answer
    (a model that explains goes on in later lines, which are not scored)."""
    from tiny_graphrag.citations import strip_citations

    for line in strip_citations(text or "").splitlines():
        line = _LABEL.sub("", line).strip()
        if line:
            return line.strip().rstrip("+").strip()
    return ""


def abstained(answer: str) -> bool:
    """Whether the answer says the data does not hold it (counted, not scored differently)."""
    return bool(_ABSTAIN.search(answer or ""))


# ---- statistics ----------------------------------------------------------------------------------
def mean_ci(values: Sequence[float]) -> dict[str, Any]:
    """Mean in percent with its 95% bootstrap interval over questions."""
    from .retrieval_eval import bootstrap_interval

    if not len(values):
        return {"mean": None, "ci95": None, "n": 0}
    lo, hi = bootstrap_interval(values)
    return {
        "mean": round(100 * float(np.mean(values)), 1),
        "ci95": [round(100 * lo, 1), round(100 * hi, 1)],
        "n": len(values),
    }


def paired(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Mean of the per-question differences a - b (percent points) with its 95% bootstrap interval."""
    return mean_ci([x - y for x, y in zip(a, b)])


def summarize(records: list[dict[str, Any]], modes: Sequence[str]) -> dict[str, Any]:
    """EM and F1 per mode, and paired differences, over the questions that ran every mode asked."""
    out: dict[str, Any] = {"modes": {}, "paired": {}}
    for mode in modes:
        rows = [r["modes"][mode] for r in records if mode in r["modes"]]
        if not rows:
            continue
        out["modes"][mode] = {
            "em": mean_ci([x["em"] for x in rows]),
            "f1": mean_ci([x["f1"] for x in rows]),
            "abstained": sum(1 for x in rows if x["abstained"]),
            "mean_context_tokens": rnd(float(np.mean([x["context_tokens"] for x in rows])), 1),
            "n": len(rows),
        }
        if any("gold_in_context" in x for x in rows):
            out["modes"][mode]["gold_passages_in_context"] = rnd(
                float(np.mean([x.get("gold_in_context", 0) for x in rows])), 2
            )
            out["modes"][mode]["questions_with_all_gold_in_context"] = sum(
                1
                for r in records
                if mode in r["modes"] and r["modes"][mode].get("gold_in_context", 0) == len(r["gold_titles"])
            )
    for a, b in [*LADDER, *(("global", m) for m in ("closed_book", "naive", "local"))]:
        both = [r for r in records if a in r["modes"] and b in r["modes"]]
        if both and a in modes and b in modes:
            out["paired"][f"{a}-{b}"] = {
                "em": paired([r["modes"][a]["em"] for r in both], [r["modes"][b]["em"] for r in both]),
                "f1": paired([r["modes"][a]["f1"] for r in both], [r["modes"][b]["f1"] for r in both]),
            }
    return out


# ---- the indexes ---------------------------------------------------------------------------------
def passage_index(work: Path, corpus: dict[str, str]) -> Path:
    """The passage index quality_retrieval measures (one chunk per passage, spaCy graph), shared by path."""
    from . import retrieval_eval as rev

    return rev.build_passage_index(work / "hotpotqa-index", corpus, extractor="spacy")


def standin_report_index(index_dir: Path, out_dir: Path) -> Path:
    """A copy of the passage index with a stand-in report for every top-level community (no model
    call). Top level only: that is the level global search's default rule picks on a graph this
    size, and the deeper levels' 6,940 more reports would only cost embedding time."""
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.backends.llm import CachedLLM
    from tiny_graphrag.index.store import MANIFEST, IndexStore
    from tiny_graphrag.reports.context import SourceText
    from tiny_graphrag.reports.generate import generate_reports

    from .standin import standin_llm

    if (out_dir / MANIFEST).is_file():
        return out_dir
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(index_dir, out_dir, ignore=shutil.ignore_patterns(MANIFEST))
    manifest = json.loads((index_dir / MANIFEST).read_text(encoding="utf-8"))
    store = IndexStore(out_dir)  # writable: the copy is unfinished until its manifest is written
    sources = {cid: SourceText(sid, text, 0) for cid, (sid, text) in store.sources().items()}
    llm = standin_llm()
    assert isinstance(llm, CachedLLM)
    top = [c for c in store.communities() if c.level == 0]
    reports = generate_reports(store.graph(), top, sources, llm)
    store.save_reports(reports)
    store.save_vectors("reports", [r.community_id for r in reports], Embedder().embed([r.text() for r in reports]))
    keep = {k: v for k, v in manifest.items() if k not in ("files", "format_version")}
    keep.setdefault("bench", {})["reports"] = (
        f"extractive stand-in (bench/standin.py), {len(reports)} top-level reports"
    )
    store.write_manifest(keep)
    store.close()
    return out_dir


# ---- one evaluation --------------------------------------------------------------------------------
def open_reader(cache_path: Path | None):
    from tiny_graphrag.backends.files import models_dir
    from tiny_graphrag.backends.llm import open_llm
    from tiny_graphrag.config import LLMConfig
    from tiny_graphrag.index.cache import CallCache

    path = models_dir() / READER_FILE
    if not path.is_absolute():
        path = ROOT / path
    return open_llm(
        LLMConfig(model=str(path), n_ctx=N_CTX, n_threads=1 if os.cpu_count() == 2 else None),
        cache=CallCache(cache_path),
    )


_LIBRARY_PROMPT: tuple[str, str] | None = None


def use_prompt(name: str) -> None:
    """Point the library's answer prompt at a variant ("new": the library's own, else PROMPT_VARIANTS)."""
    global _LIBRARY_PROMPT
    from tiny_graphrag.search import prompts

    if _LIBRARY_PROMPT is None:
        _LIBRARY_PROMPT = (prompts.ANSWER_SYSTEM, prompts.ANSWER_USER)
    prompts.ANSWER_SYSTEM, prompts.ANSWER_USER = _LIBRARY_PROMPT if name == "new" else PROMPT_VARIANTS[name]


class Reader:
    """The reader and the engines; one method per mode, each returning the scored record of one answer."""

    def __init__(self, index_dir: Path, llm, global_index: Path | None = None):
        from tiny_graphrag.search.config import GlobalConfig, SearchConfig
        from tiny_graphrag.search.engine import QueryEngine

        self.llm = llm
        self.config = SearchConfig(
            context_tokens=BUDGET,
            answer_max_tokens=ANSWER_MAX_TOKENS,
            n_ctx=N_CTX,
            global_=GlobalConfig(
                dynamic_map_calls=GLOBAL_MAP_CALLS, map_chunk_tokens=BUDGET, reduce_max_tokens=ANSWER_MAX_TOKENS
            ),
        )
        self.engine = QueryEngine(index_dir, llm=llm, config=self.config)
        self.llm = self.engine.llm  # the engine's wrapper: one call counter for every mode
        self.global_engine = QueryEngine(global_index, llm=self.llm, config=self.config) if global_index else None
        store = self.engine.store
        self.title_of_doc = {d.id: d.source.split(":", 1)[1] for d in store.documents()}
        self.chunk_of_title = {self.title_of_doc[c.doc_id]: c for c in store.chunks()}

    def _ask(self, context: str, question: str, shown: Sequence[int] = ()) -> tuple[str, float, bool]:
        """The answer prompt and the answer grammar of naive search (`shown`: the source ids in the context)."""
        from tiny_graphrag.search.prompts import NAIVE_CITATIONS, answer_grammar, answer_messages

        t0 = time.perf_counter()
        out = self.llm.complete(
            answer_messages(context, question, NAIVE_CITATIONS),
            max_tokens=ANSWER_MAX_TOKENS,
            temperature=0.0,
            grammar=answer_grammar({"Sources": sorted(shown)}),
        )
        return out.text.strip(), time.perf_counter() - t0, out.cached

    def closed_book(self, q) -> dict[str, Any]:
        text, secs, cached = self._ask("", q.text)
        return {"raw": text, "context_tokens": 0, "seconds": secs, "cached": cached}

    def oracle(self, q) -> dict[str, Any]:
        from tiny_graphrag.search.context import build_naive_context
        from tiny_graphrag.search.tokens import counter_for

        chunks = [self.chunk_of_title[t] for t in q.gold]
        built = build_naive_context(chunks, self.engine.index.sid_of, BUDGET, counter_for(self.llm))
        text, secs, cached = self._ask(built.text, q.text, [c.id for c in built.sources.chunks])
        return {
            "raw": text,
            "context_tokens": built.tokens,
            "seconds": secs,
            "cached": cached,
            "gold_in_context": len(built.sources.chunks),
        }

    def _search(self, fn, q) -> dict[str, Any]:
        calls, hits = self.llm.calls, self.llm.cache_hits
        t0 = time.perf_counter()
        res = fn(q.text)
        shown = [self.title_of_doc.get(c.doc_id, "") for c in res.sources.chunks]
        return {
            "raw": res.answer,
            "context_tokens": res.context_tokens,
            "seconds": time.perf_counter() - t0,
            "cached": self.llm.calls == calls and self.llm.cache_hits > hits,
            "gold_in_context": len(set(q.gold) & set(shown)),
            "sources_shown": shown,
        }

    def naive(self, q) -> dict[str, Any]:
        return self._search(self.engine.naive_search, q)

    def local(self, q) -> dict[str, Any]:
        return self._search(self.engine.local_search, q)

    def run_global(self, q) -> dict[str, Any]:
        assert self.global_engine is not None
        eng = self.global_engine
        calls, hits = self.llm.calls, self.llm.cache_hits
        t0 = time.perf_counter()
        res = eng.global_search(q.text)
        secs = time.perf_counter() - t0
        d = res.details
        gold_chunks = {self.chunk_of_title[t].id for t in q.gold}
        community = {c.id: c for c in eng.index.communities}
        graph = eng.index.graph

        def relevant(rid: int) -> bool:
            # A report is relevant when its community holds an entity mentioned in a gold passage.
            nodes = community[eng.index.globals.reports[rid].community_id].nodes
            return any(p[1] in gold_chunks for n in nodes if n in graph for p in graph.nodes[n].get("provenance", ()))

        batches = []
        for i, text in enumerate(d.get("map_contexts", [])):
            rids = [int(line.split("|", 1)[0]) for line in text.splitlines()[2:] if line.split("|", 1)[0].isdigit()]
            scores = [p["score"] for p in d.get("points", []) if p["batch"] == i]
            batches.append({"reports": rids, "relevant_reports": [r for r in rids if relevant(r)], "scores": scores})
        return {
            "raw": res.answer,
            "context_tokens": res.context_tokens,
            "seconds": secs,
            "cached": self.llm.calls == calls and self.llm.cache_hits > hits,
            "level": d.get("level"),
            "reports_at_level": d.get("reports_at_level"),
            "map_batches": batches,
            "invalid_map_answers": d.get("invalid_map_answers"),
            "points_in_reduce": d.get("points_in_reduce"),
            "points": d.get("points", []),
        }

    def _relevant_reports(self, q) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
        """Top-level reports (id, report) whose community holds an entity mentioned in a gold
        passage, and the others."""
        eng = self.global_engine
        assert eng is not None
        gold_chunks = {self.chunk_of_title[t].id for t in q.gold}
        community = {c.id: c for c in eng.index.communities}
        graph = eng.index.graph

        def relevant(report) -> bool:
            nodes = community[report.community_id].nodes
            return any(p[1] in gold_chunks for n in nodes if n in graph for p in graph.nodes[n].get("provenance", ()))

        reports = eng.index.globals.at_level(eng.index.globals.levels[0])
        rel = [rr for rr in reports if relevant(rr[1])]
        return rel, [rr for rr in reports if not relevant(rr[1])]

    def map_probe(self, q) -> dict[str, Any]:
        """The map step alone on two batches: relevant reports, and as many irrelevant ones
        (seeded choice): does the model score the first above 0 and the second at 0?"""
        import random

        from tiny_graphrag.search.context import pack_report_batches
        from tiny_graphrag.search.global_search import run_map
        from tiny_graphrag.search.tokens import counter_for

        rel, other = self._relevant_reports(q)
        rel = rel[:MAP_PROBE_REPORTS]
        irrelevant = random.Random(q.id).sample(other, min(len(other), max(len(rel), 1)))
        counter = counter_for(self.llm)
        out: dict[str, Any] = {
            "relevant_reports": [i for i, _ in rel],
            "irrelevant_reports": [i for i, _ in irrelevant],
        }
        for name, reports in (("relevant", rel), ("irrelevant", irrelevant)):
            if not reports:
                out[name] = None
                continue
            batch = pack_report_batches(reports, BUDGET, counter, seed=None)[:1]
            t0 = time.perf_counter()
            answers = run_map(self.llm, batch, q.text, self.config.global_)
            out[name] = {
                "reports_in_batch": list(batch[0].report_ids),
                "batch_tokens": batch[0].tokens,
                "valid": answers[0].valid,
                "seconds": rnd(time.perf_counter() - t0, 1),
                "points": [{"score": p.score, "description": p.description} for p in answers[0].points],
            }
        return out

    def close(self) -> None:
        self.engine.close()
        if self.global_engine:
            self.global_engine.close()


def score_record(gold: str, rec: dict[str, Any]) -> dict[str, Any]:
    answer = extract_answer(rec["raw"])
    return {
        "answer": answer,
        "em": exact_match(answer, gold),
        "f1": round(token_f1(answer, gold), 4),
        "abstained": abstained(answer),
        **rec,
        "seconds": rnd(rec["seconds"], 2),
    }


def evaluate(
    reader: Reader,
    questions,
    modes: Sequence[str],
    global_ids: set[str] = frozenset(),
    half: dict[str, str] | None = None,
    progress_path: Path | None = None,
    probe_global: bool = False,
) -> list[dict[str, Any]]:
    """Every question through every mode (question by question, so a run cut short has whole rows)."""
    records = []
    t0 = time.perf_counter()
    for i, q in enumerate(questions):
        rec: dict[str, Any] = {
            "id": q.id,
            "question": q.text,
            "gold_answer": q.answer,
            "type": q.type,
            "gold_titles": list(q.gold),
            "half": (half or {}).get(q.id),
            "modes": {},
        }
        for mode in modes:
            if mode == "map_probe":  # not an answer: the map step's scores (see Reader.map_probe)
                rec["map_probe"] = reader.map_probe(q)
                continue
            rec["modes"][mode] = score_record(q.answer, getattr(reader, mode)(q))
        if q.id in global_ids:
            rec["modes"]["global"] = score_record(q.answer, reader.run_global(q))
            if probe_global and "map_probe" not in modes:
                rec["map_probe"] = reader.map_probe(q)
        records.append(rec)
        log.info(
            "answers: %d/%d questions (%.0f s; %d model calls, %d replayed)",
            i + 1,
            len(questions),
            time.perf_counter() - t0,
            reader.llm.calls,
            reader.llm.cache_hits,
        )
        if progress_path:
            dump_json(records, progress_path)
    return records


def map_step_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How the map step scored: batches holding a relevant report, and whether any point scored > 0."""
    batches = [b for r in records if "global" in r["modes"] for b in r["modes"]["global"].get("map_batches", [])]
    with_rel = [b for b in batches if b["relevant_reports"]]
    without = [b for b in batches if not b["relevant_reports"]]
    glob = [r["modes"]["global"] for r in records if "global" in r["modes"]]
    probes = [r["map_probe"] for r in records if r.get("map_probe")]

    def scored(which: str) -> list[list[int]]:
        return [[p["score"] for p in pr[which]["points"]] for pr in probes if pr.get(which)]

    probe = {
        "questions": len(probes),
        "relevant_batches": len(scored("relevant")),
        "relevant_batches_with_a_point_above_0": sum(1 for x in scored("relevant") if any(v > 0 for v in x)),
        "irrelevant_batches": len(scored("irrelevant")),
        "irrelevant_batches_with_a_point_above_0": sum(1 for x in scored("irrelevant") if any(v > 0 for v in x)),
        "relevant_scores": scored("relevant"),
        "irrelevant_scores": scored("irrelevant"),
        "questions_without_a_relevant_top_level_report": sum(1 for pr in probes if not pr.get("relevant")),
    }
    return {
        "probe": probe,
        "questions": len(glob),
        "map_batches": len(batches),
        "batches_with_a_relevant_report": len(with_rel),
        "of_those_with_a_point_scored_above_0": sum(1 for b in with_rel if any(s > 0 for s in b["scores"])),
        "batches_without_a_relevant_report": len(without),
        "of_those_with_a_point_scored_above_0_": sum(1 for b in without if any(s > 0 for s in b["scores"])),
        "all_scores": [s for b in batches for s in b["scores"]],
        "reduce_skipped_every_point_0": sum(1 for g in glob if not g.get("points_in_reduce")),
        "answers_abstained": sum(1 for g in glob if g["abstained"]),
        "invalid_map_answers": sum(g.get("invalid_map_answers") or 0 for g in glob),
    }


# ---- the section ---------------------------------------------------------------------------------
def halves(questions) -> tuple[list, list]:
    """(tuning half, held-out half): even and odd positions of the question file."""
    return list(questions[0::2]), list(questions[1::2])


def load_questions():
    """Questions with their gold answers, and the passages."""
    from . import retrieval_eval as rev

    questions, corpus = rev.load_hotpotqa(HOTPOT)
    answers = {q["_id"]: q["answer"] for q in json.loads((HOTPOT / "questions.json").read_text(encoding="utf-8"))}
    return [_WithAnswer(q, answers[q.id]) for q in questions], corpus


class _WithAnswer:
    def __init__(self, q, answer: str):
        self.id, self.text, self.gold, self.type, self.answer = q.id, q.text, q.gold, q.type, answer


def measure(
    work: Path,
    questions,
    corpus,
    modes: Sequence[str],
    n_global: int,
    cache_path: Path | None,
    prompt: str = "new",
    progress_path: Path | None = None,
    probe_global: bool = False,
) -> dict[str, Any]:
    t_start = time.perf_counter()
    use_prompt(prompt)
    index = passage_index(work, corpus)
    needs_reports = n_global or "map_probe" in modes
    global_index = standin_report_index(index, work / "hotpotqa-index-standin-reports") if needs_reports else None
    llm = open_reader(cache_path)
    reader = Reader(index, llm, global_index)
    tune, _ = halves(load_questions()[0])
    half = {q.id: "tune" for q in tune}
    global_ids = {q.id for q in questions[:n_global]}
    try:
        records = evaluate(
            reader,
            questions,
            modes,
            global_ids,
            {q.id: half.get(q.id, "held-out") for q in questions},
            progress_path,
            probe_global,
        )
    finally:
        reader.close()
        use_prompt("new")
    all_modes = [m for m in modes if m != "map_probe"] + (["global"] if n_global else [])
    result = assemble(records, all_modes, prompt)
    result["reader"]["fingerprint"] = llm.fingerprint
    result["model_calls"] = {
        "made": llm.calls,
        "replayed_from_cache": llm.cache_hits,
        "cache": str(cache_path) if cache_path else "in memory",
    }
    result["seconds"] = rnd(time.perf_counter() - t_start, 1)
    return result


def assemble(records: list[dict[str, Any]], all_modes: Sequence[str], prompt: str) -> dict[str, Any]:
    """The section's result from the per-question records (also what --merge recomputes)."""
    result: dict[str, Any] = {
        "reader": {
            "model": READER_FILE,
            "n_ctx": N_CTX,
            "decoding": "greedy (temperature 0)",
            "answer_max_tokens": ANSWER_MAX_TOKENS,
        },
        "prompt": prompt,
        "context_budget_tokens": BUDGET,
        "questions": len(records),
        "halves": {h: sum(1 for r in records if r["half"] == h) for h in ("tune", "held-out")},
        "results": summarize(records, all_modes),
        "seconds_per_answer_made_here": {
            m: rnd(float(np.mean(v)), 2) if v else None
            for m in all_modes
            for v in [[r["modes"][m]["seconds"] for r in records if m in r["modes"] and not r["modes"][m]["cached"]]]
        },
        "per_question": records,
    }
    sub = [r for r in records if "global" in r["modes"]]
    if sub or any(r.get("map_probe") for r in records):
        result["global"] = {
            "questions": len(sub),
            "setup": (
                f"stand-in extractive reports for every top-level community (bench/standin.py); level 0; "
                f"GlobalConfig(dynamic_map_calls={GLOBAL_MAP_CALLS}, map_chunk_tokens={BUDGET}); the reduce "
                f"context within {BUDGET} tokens"
            ),
            "results_on_global_subset": summarize(sub, [m for m in (*MODES, "global") if m in all_modes]),
            "map_step": map_step_summary(records),
        }
    return result


def merge(paths: Sequence[Path]) -> dict[str, Any]:
    """One result from runs over disjoint question shards (parallel runs of `main`), in file order."""
    runs = []
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(data, list):  # a run's progress file (a run stopped early): its finished questions
            data = {
                "per_question": data,
                "prompt": None,
                "questions": len(data),
                "data": f"progress file {path}",
                "model_calls": {},
            }
        runs.append(data)
    order = {q.id: i for i, q in enumerate(load_questions()[0])}
    by_id: dict[str, dict[str, Any]] = {}
    for run in runs:  # a question's modes may come from several runs (e.g. global in a run of its own)
        for r in run["per_question"]:
            if r["id"] in by_id:
                clash = set(by_id[r["id"]]["modes"]) & set(r["modes"])
                # Two workers met on a question: greedy decoding of the same prompts must agree.
                if any(by_id[r["id"]]["modes"][m]["raw"] != r["modes"][m]["raw"] for m in clash):
                    raise ValueError(f"question {r['id']}: runs disagree on {sorted(clash)}")
                by_id[r["id"]]["modes"].update(r["modes"])
                if r.get("map_probe"):
                    by_id[r["id"]]["map_probe"] = r["map_probe"]
            else:
                by_id[r["id"]] = {**r, "modes": dict(r["modes"])}
    records = sorted(by_id.values(), key=lambda r: order[r["id"]])
    modes = list(dict.fromkeys(m for r in records for m in r["modes"]))
    modes = [m for m in (*MODES, "global") if m in modes]
    prompts_used = {run["prompt"] for run in runs} - {None}  # progress files do not say; their run's log does
    if len(prompts_used) > 1:
        raise ValueError(f"runs with different prompts cannot be merged: {prompts_used}")
    result = assemble(records, modes, prompts_used.pop() if prompts_used else "new")
    result["reader"]["fingerprint"] = next((r["reader"].get("fingerprint") for r in runs if "reader" in r), None)
    result["model_calls"] = {k: sum(r["model_calls"].get(k, 0) for r in runs) for k in ("made", "replayed_from_cache")}
    result["merged_from"] = [
        {"data": r.get("data"), "seconds": r.get("seconds"), "questions": r["questions"]} for r in runs
    ]
    return result


def run(ctx: Context) -> dict[str, Any]:
    questions, corpus = load_questions()
    _, held = halves(questions)
    n_global = GLOBAL_QUESTIONS
    if ctx.mode.name == "quick":
        held, n_global = held[:3], 1
    limit = os.environ.get("TINY_GRAPHRAG_ANSWERS_LIMIT")
    if limit:
        held = held[: int(limit)]
    cache = Path(os.environ[CACHE_ENV]) if os.environ.get(CACHE_ENV) else ctx.work / "answers-cache.sqlite"
    out = measure(ctx.work, held, corpus, MODES, min(n_global, len(held)), cache, probe_global=True)
    out["data"] = f"hotpotqa100, held-out half: {len(held)} questions (odd positions); 994 passages"
    return out


def table(r: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("data", r["data"]),
        ("reader", f"{r['reader']['model']}, context budget {r['context_budget_tokens']} tokens"),
    ]
    for mode, m in r["results"]["modes"].items():
        rows.append(
            (
                mode,
                f"EM {m['em']['mean']} {m['em']['ci95']}  F1 {m['f1']['mean']} {m['f1']['ci95']}  "
                f"abstained {m['abstained']}/{m['n']}  context {m['mean_context_tokens']} tokens",
            )
        )
    for pair, d in r["results"]["paired"].items():
        rows.append(
            (f"paired {pair}", f"EM {d['em']['mean']:+} {d['em']['ci95']}  F1 {d['f1']['mean']:+} {d['f1']['ci95']}")
        )
    if "global" in r:
        ms = r["global"]["map_step"]
        rows.append(
            (
                "global map step",
                f"{ms['of_those_with_a_point_scored_above_0']}/{ms['batches_with_a_relevant_report']} "
                "batches with a relevant report scored a point > 0",
            )
        )
    rows.append(("model calls", f"{r['model_calls']['made']} made, {r['model_calls']['replayed_from_cache']} replayed"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--half", choices=("tune", "held-out"), default="held-out")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--shard", default="0/1", help="i/n: every n-th question from the i-th (parallel runs)")
    ap.add_argument("--reverse", action="store_true", help="last question first (a second worker on a shard)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--global-questions", type=int, default=0)
    ap.add_argument("--prompt", choices=("new", *PROMPT_VARIANTS), default="new")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "answers-work")
    ap.add_argument("--cache", type=Path, default=ROOT / "bench" / "out" / "answers-cache.sqlite")
    ap.add_argument("--merge", type=Path, nargs="+", help="combine these runs' JSON files (no model calls)")
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.merge:
        out = merge(args.merge)
        out["data"] = f"hotpotqa100, {out['questions']} questions (merged from {len(args.merge)} runs)"
        dump_json(out, args.json)
        for k, v in table(out):
            print(f"  {k:<28} {v}")
        return 0
    questions, corpus = load_questions()
    tune, held = halves(questions)
    chosen = tune if args.half == "tune" else held
    if args.limit:
        chosen = chosen[: args.limit]
    i, n = (int(x) for x in args.shard.split("/"))
    chosen = chosen[i::n]
    if args.reverse:
        chosen = chosen[::-1]
    modes = [m for m in args.modes.split(",") if m]
    args.work.mkdir(parents=True, exist_ok=True)
    out = measure(
        args.work,
        chosen,
        corpus,
        modes,
        args.global_questions,
        args.cache,
        args.prompt,
        progress_path=args.json.with_suffix(".progress.json"),
    )
    out["data"] = f"hotpotqa100, {args.half} half, {len(chosen)} questions (shard {args.shard})"
    dump_json(out, args.json)
    for k, v in table(out):
        print(f"  {k:<28} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
