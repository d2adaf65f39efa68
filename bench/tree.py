"""RAPTOR trees: what they cost to build beside community reports, and what tree search reaches.

    python -m bench.tree cost --sizes 1000 2000 4000 --json cost.json   # tree vs reports, 3 corpus sizes
    python -m bench.tree recall --questions 20 --json recall.json       # hotpotqa100 held-out half
    python -m bench.tree answers --questions 20 --json answers.json     # EM/F1: naive, local, tree (0.5B reader)
    python -m bench.tree carol --json carol.json                        # A Christmas Carol, whole-story questions

cost: the first n tokens of the Obama article built once with the spaCy extractor, community
reports (the demo's settings: communities of 5+ entities, 300-token reports from 1,200 tokens of
context, one level) and the tree (TreeConfig defaults), both written by Qwen2.5-Coder-0.5B.
Each model call is counted by a wrapper around the backend, split by its prompt (a tree summary
has RAPTOR's prompt), so calls, prompt and output tokens are per stage; seconds are the build's
own stage timings. Fresh call cache per size.

recall: the held-out questions (odd positions, as in bench/answers.py) of hotpotqa100, the first
`--questions` of them; the corpus is the union of those questions' passages (their gold ones and
HotpotQA's distractors: 10 a question), one chunk each, with the tree built over it by SmolLM2-135M
(the fast model; its summaries are weak). For each question, the chunks a tree context reaches
(a chunk shown, or every chunk a shown summary covers, in rank order) within 2,000 tokens
(RAPTOR's best budget), collapsed and traversal, beside naive search's hybrid ranking and naive's
context within the same budget. Passage recall@k with 95% bootstrap intervals over questions.
Nothing was tuned on these questions.

answers: the same questions and passages (with spaCy's graph, for local search), the same tree;
bench/answers.py's reader (Qwen2.5-Coder-0.5B), answer prompt, 800-token context budget for every
mode, and scoring (EM/F1 with 95% intervals, paired differences).

carol: A Christmas Carol (Gutenberg text) with the tree and reports, a few whole-story questions
answered by tree, global (over the community reports, and over the tree's summaries) and naive
search with Qwen2.5-Coder-0.5B; the answers are printed side by side.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import HOTPOT, ROOT, dump_json, obama_slice, rnd

log = logging.getLogger("bench.tree")

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SMOLLM = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
CAROL = ROOT.parent / "shared" / "data" / "corpora" / "a_christmas_carol.txt"
BUDGET = 2000
CAROL_QUESTIONS = (
    "How does Scrooge change from the beginning of the story to the end?",
    "Which spirits visit Scrooge, and what does each one show him?",
    "What are the main themes of the story?",
)


class Counting:
    """An LLM backend that counts the calls, prompt and output tokens of each stage it serves."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.stages: dict[str, dict[str, int]] = {}
        self.name, self.fingerprint, self.n_ctx, self.seed = (
            backend.name,
            backend.fingerprint,
            backend.n_ctx,
            backend.seed,
        )

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(text)

    def complete(self, messages, **kw):
        from tiny_graphrag.indexing.tree import SUMMARY_SYSTEM
        from tiny_graphrag.reports.prompt import REPORT_SYSTEM_PROMPT

        out = self.backend.complete(messages, **kw)
        system = messages[0].get("content")
        stage = {SUMMARY_SYSTEM: "tree", REPORT_SYSTEM_PROMPT: "reports"}.get(system, "queries")
        s = self.stages.setdefault(stage, {"calls": 0, "prompt_tokens": 0, "output_tokens": 0})
        s["calls"] += 1
        s["prompt_tokens"] += out.prompt_tokens
        s["output_tokens"] += out.completion_tokens
        return out

    def stream(self, messages, **kw):
        return self.backend.stream(messages, **kw)


def _llm(path: Path, cache_path: Path | None, n_ctx: int = 4096):
    from tiny_graphrag.backends.llm import CachedLLM, LlamaCppLLM
    from tiny_graphrag.config import LLMConfig
    from tiny_graphrag.index.cache import CallCache

    # One thread: on 2 shared cores llama.cpp's threads spin against each other (bench/answers.py does the same).
    counting = Counting(LlamaCppLLM(LLMConfig(model=str(path), n_ctx=n_ctx, n_threads=1)))
    return CachedLLM(counting, CallCache(cache_path)), counting


def _demo_config(tree: bool):
    from tiny_graphrag.config import BuildConfig, CommunityConfig, ExtractionConfig, LLMConfig, TreeConfig

    return BuildConfig(
        extraction=ExtractionConfig(extractor="spacy"),
        communities=CommunityConfig(max_cluster_size=200),
        llm=LLMConfig(model=str(QWEN), max_report_tokens=300, report_context_tokens=1200, report_min_size=5),
        tree=TreeConfig(enabled=tree),
    )


def cost(sizes: Sequence[int], work: Path) -> dict[str, Any]:
    from tiny_graphrag import build_index

    rows = []
    for n in sizes:
        folder = work / f"cost-{n}"
        llm, counting = _llm(QWEN, folder / "calls.sqlite")
        t0 = time.perf_counter()
        r = build_index(
            [obama_slice(n)], folder / "idx", schema="general", config=_demo_config(True), llm=llm, progress=False
        )
        tree = r.open().manifest["tree"]
        rows.append(
            {
                "corpus_tokens": n,
                "chunks": r.summary.chunks,
                "communities": sum(r.summary.communities_per_level.values()),
                "seconds": {k: r.summary.seconds_per_stage.get(k) for k in ("reports", "tree")},
                "build_seconds": rnd(time.perf_counter() - t0, 1),
                "reports": r.summary.reports,
                "tree_nodes_per_layer": tree["nodes_per_layer"],
                "summary_tokens": tree["summary_tokens"],
                "fallback_summaries": tree["fallback_summaries"],
                "llm": counting.stages,
            }
        )
        log.info("size %d: %s", n, rows[-1])
    return {"rows": rows, "model": QWEN.name}


# ---- recall on hotpotqa100 ---------------------------------------------------------------------
def _subset(n_questions: int):
    from . import retrieval_eval as rev

    questions, corpus = rev.load_hotpotqa(HOTPOT)
    held = questions[1::2][:n_questions]
    raw = {q["_id"]: q for q in json.loads((HOTPOT / "questions.json").read_text(encoding="utf-8"))}
    titles = dict.fromkeys(t for q in held for t, _ in raw[q.id]["context"] if t in corpus)
    return held, {t: corpus[t] for t in titles}


def _add_tree(index: Path, llm, embedder, summary_tokens: int) -> dict[str, Any]:
    from tiny_graphrag.config import TreeConfig
    from tiny_graphrag.index.store import IndexStore
    from tiny_graphrag.indexing.tree import tree_stage

    store = IndexStore(index)
    manifest = dict(store.manifest)
    t0 = time.perf_counter()
    info = tree_stage(
        store, store.chunks(), llm, embedder, TreeConfig(enabled=True, summary_tokens=summary_tokens), progress=True
    )
    info["seconds"] = rnd(time.perf_counter() - t0, 1)
    manifest.pop("files", None)
    manifest.pop("format_version", None)
    store.write_manifest({**manifest, "tree": info})
    store.close()
    return info


def recall(n_questions: int, work: Path, summary_tokens: int) -> dict[str, Any]:
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.search.config import SearchConfig, TreeSearchConfig
    from tiny_graphrag.search.engine import QueryEngine

    from . import retrieval_eval as rev

    held, corpus = _subset(n_questions)
    embedder = Embedder()
    index = rev.build_passage_index(work / "hotpot" / "idx", corpus, embedder=embedder, extractor=None)
    llm, counting = _llm(SMOLLM, work / "hotpot" / "calls.sqlite")
    tree_info = _add_tree(index, llm, embedder, summary_tokens)
    rankings: dict[str, list[list[str]]] = {m: [] for m in ("naive_hybrid", "naive_context", "collapsed", "traversal")}
    with QueryEngine(index, embedder=embedder, config=SearchConfig(context_tokens=BUDGET)) as qe:
        title_of = {d.id: d.source.split(":", 1)[1] for d in qe.store.documents()}
        doc_of = {c.id: c.doc_id for c in qe.store.chunks()}

        def titles(chunk_ids) -> list[str]:
            return list(dict.fromkeys(title_of[doc_of[c]] for c in chunk_ids))

        for q in held:
            qvec = qe.index.embed_query(q.text)
            rankings["naive_hybrid"].append(titles(qe.index.hybrid.rank(q.text, qvec).ids("fused")))
            naive = qe.naive_search(q.text, only_context=True)
            rankings["naive_context"].append(titles(c.chunk_id for c in naive.sources.chunks))
            for strategy in ("collapsed", "traversal"):
                res = qe.tree_search(
                    q.text, only_context=True, config=TreeSearchConfig(strategy=strategy, context_tokens=BUDGET)
                )
                rankings[strategy].append(titles(res.details["reached"]))
    out: dict[str, Any] = {
        "questions": len(held),
        "passages": len(corpus),
        "budget_tokens": BUDGET,
        "tree": tree_info,
        "llm": counting.stages,
        "modes": {},
    }
    for mode, ranked in rankings.items():
        row: dict[str, Any] = {"reached_mean": rnd(sum(map(len, ranked)) / len(ranked), 1)}
        for k in (2, 5, 10, 1000):
            vals = [rev.recall_at(r, q.gold, k) for r, q in zip(ranked, held)]
            lo, hi = rev.bootstrap_interval(vals)
            row[f"recall@{'all' if k == 1000 else k}"] = [rnd(sum(vals) / len(vals)), rnd(lo), rnd(hi)]
        out["modes"][mode] = row
    return out


def answers(n_questions: int, work: Path, summary_tokens: int) -> dict[str, Any]:
    """EM/F1 of the 0.5B reader (bench/answers.py's reader, prompt, budget and scoring) answering
    from naive, local and tree (collapsed, traversal) contexts over `_subset`'s passages."""
    from tiny_graphrag.backends.embed import Embedder
    from tiny_graphrag.search.config import TreeSearchConfig

    from . import answers as ans
    from . import retrieval_eval as rev

    held, corpus = _subset(n_questions)
    gold = {q.id: q for q in ans.load_questions()[0]}
    held = [gold[q.id] for q in held]  # the same questions, with their gold answers
    embedder = Embedder()
    # spaCy's graph, as the answers bench's index has, so local search has entities to walk.
    index = rev.build_passage_index(work / "hotpot" / "idx", corpus, embedder=embedder, extractor="spacy")
    llm, counting = _llm(SMOLLM, work / "hotpot" / "calls.sqlite")
    tree_info = _add_tree(index, llm, embedder, summary_tokens)
    reader = ans.Reader(index, ans.open_reader(work / "hotpot" / "reader.sqlite"))
    engine = reader.engine

    def tree_mode(strategy: str):
        config = TreeSearchConfig(strategy=strategy, context_tokens=ans.BUDGET)
        return lambda q: reader._search(lambda text: engine.tree_search(text, config=config), q)

    modes = {
        "naive": reader.naive,
        "local": reader.local,
        "tree_collapsed": tree_mode("collapsed"),
        "tree_traversal": tree_mode("traversal"),
    }
    records = []
    for i, q in enumerate(held):
        rec = {
            "id": q.id,
            "question": q.text,
            "gold_answer": q.answer,
            "gold_titles": list(q.gold),
            "modes": {m: ans.score_record(q.answer, fn(q)) for m, fn in modes.items()},
        }
        records.append(rec)
        log.info("answers %d/%d: %s", i + 1, len(held), {m: r["answer"] for m, r in rec["modes"].items()})
    reader.close()
    summary = ans.summarize(records, list(modes))
    for a, b in (("tree_collapsed", "naive"), ("tree_collapsed", "local"), ("tree_collapsed", "tree_traversal")):
        summary["paired"][f"{a}-{b}"] = {
            m: ans.paired([r["modes"][a][m] for r in records], [r["modes"][b][m] for r in records])
            for m in ("em", "f1")
        }
    return {
        "questions": len(held),
        "passages": len(corpus),
        "budget_tokens": ans.BUDGET,
        "tree": tree_info,
        "tree_llm": counting.stages,
        "reader": ans.READER_FILE,
        **summary,
        "records": records,
    }


# ---- A Christmas Carol -------------------------------------------------------------------------
def carol(work: Path) -> dict[str, Any]:
    from tiny_graphrag import build_index
    from tiny_graphrag.search.config import GlobalConfig, SearchConfig
    from tiny_graphrag.search.engine import QueryEngine

    folder = work / "carol"
    llm, counting = _llm(QWEN, folder / "calls.sqlite")
    r = build_index([CAROL], folder / "idx", schema="general", config=_demo_config(True), llm=llm, progress=False)
    answers = []
    with QueryEngine(r.path, llm=llm, config=SearchConfig(context_tokens=BUDGET, answer_max_tokens=160)) as qe:
        for q in CAROL_QUESTIONS:
            row = {"question": q}
            runs = {
                "tree": lambda: qe.tree_search(q),
                "global": lambda: qe.global_search(q),
                "global_over_tree": lambda: qe.global_search(q, config=GlobalConfig(source="tree")),
                "naive": lambda: qe.naive_search(q),
            }
            for mode, ask in runs.items():
                t0 = time.perf_counter()
                res = ask()
                row[mode] = {
                    "answer": res.answer,
                    "llm_calls": res.llm_calls,
                    "context_tokens": res.context_tokens,
                    "seconds": rnd(time.perf_counter() - t0, 1),
                    "level": res.details.get("level"),
                }
                log.info("%s | %s: %s", q, mode, res.answer)
            answers.append(row)
    return {
        "summary": r.summary.to_dict(),
        "tree": r.open().manifest["tree"],
        "llm": counting.stages,
        "answers": answers,
    }


def main(argv: Sequence[str] | None = None) -> int:
    from tiny_graphrag.config import TreeConfig

    p = argparse.ArgumentParser(prog="python -m bench.tree", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["cost", "recall", "answers", "carol"])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    p.add_argument("--questions", type=int, default=20)
    p.add_argument(
        "--summary-tokens",
        type=int,
        default=TreeConfig().summary_tokens,
        help="recall, answers: output per summary (default: TreeConfig's)",
    )
    p.add_argument("--work", type=Path, help="scratch folder (default: a fresh temporary one, removed after)")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-tree-"))
    try:
        result = {
            "cost": lambda: cost(args.sizes, work),
            "recall": lambda: recall(args.questions, work, args.summary_tokens),
            "answers": lambda: answers(args.questions, work, args.summary_tokens),
            "carol": lambda: carol(work),
        }[args.what]()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    dump_json(result, args.json)
    json.dump(result, sys.stdout, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
