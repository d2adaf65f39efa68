"""Global answers for a small reader: the text's own sentences nearest the question, by theme, each cited.

GraphRAG's map-reduce has a model read community reports and write the answer. With a 0.5B model both steps lose what
matters: its reports carry few of the facts a reader of the text would name (a fifth of the key facts of
bench/data/global_questions.json were anywhere in the reports), and its reduce kept an eighth of those (1.2% of the key
facts reached the answer; the demo's themes answer repeated one fact twice: bench/RESULTS.md). LazyGraphRAG defers
summarising to query time; with a small reader nothing is summarised:

1. The `GlobalConfig.chunks` chunks nearest the question, their sentences nearest it first, a long one lower (two short
   ones name more: `length_penalty`), while the answer's `reduce_max_tokens` hold (on the tune questions, capping
   sentences per community, diversifying them by embedding or ranking central ones higher kept fewer key facts).
2. Each sentence under its theme: the top-level community that holds most of the entities its chunk mentions (a RAPTOR
   tree's top summary covering the chunk), headed by the names of it that its sentences name (the summary's title).
3. The answer: "- Names: sentence [Data: Sources (id)]", themes in order of their best sentence. No model call."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from math import log

import numpy as np

from tiny_graphrag.records import Chunk
from tiny_graphrag.reports.generate import names_title
from tiny_graphrag.search.answer import SearchRun
from tiny_graphrag.search.config import GlobalConfig
from tiny_graphrag.search.context import BuiltContext, source_chunk, source_report
from tiny_graphrag.search.evidence import passage_of, sentences_of
from tiny_graphrag.search.index import SearchIndex
from tiny_graphrag.search.prompts import NO_DATA_ANSWER
from tiny_graphrag.search.report_index import GlobalIndex
from tiny_graphrag.search.result import SearchResult, Sources, StreamingResult

Quote = tuple[Chunk, str, float]  # a sentence, the chunk it is from, its query cosine
MIN_WORDS = 4
NAMED = 3  # an entity the sentence itself names counts this many times one its chunk only mentions


def search_themes(
    index: SearchIndex, run: SearchRun, plan: tuple[GlobalIndex, int | None], config: GlobalConfig, *, stream: bool
) -> SearchResult | StreamingResult:
    globals_ = plan[0]
    with run.timer("context"):
        qvec = index.embed_query(run.query)
        near = index.chunk_vectors.search(qvec, config.chunks)
        quotes = nearest_sentences(index, index.store.chunks_by_id([c for c, _ in near]), qvec)
        tok = {t: max(run.counter(t), 1) for _, t, cos in quotes if cos >= config.min_similarity}  # tokens, for log
        order = sorted((q for q in quotes if q[1] in tok), key=lambda q: config.length_penalty * log(tok[q[1]]) - q[2])
        picked, tokens = [], 0
        for q in order:  # best first, while the answer's budget holds (+ 12: the theme's title and the citation)
            if tokens + tok[q[1]] + 12 <= config.reduce_max_tokens:
                picked.append(q)
                tokens += tok[q[1]] + 12
        groups: dict[int | None, list[Quote]] = {}
        for q, theme in zip(picked, themes_of(index, globals_, picked)):
            groups.setdefault(theme, []).append(q)
    lines = []
    for rid, group in groups.items():
        title = f"{named}: " if rid is not None and (named := heading(index, globals_, rid, group)) else ""
        for i, (chunk, text, _) in enumerate(group):
            cite = f"{text} [Data: Sources ({index.sid_of[chunk.id]})]"
            lines.append(f"- {title}{cite}" if i == 0 else f"  {cite}")
    sources = Sources(
        chunks=tuple(source_chunk(c, index.sid_of[c.id]) for c in {c.id: c for c, _, _ in picked}.values()),
        reports=tuple(source_report(rid, globals_.reports[rid]) for rid in groups if rid is not None),
    )
    context = "\n".join(f"{score:.2f} [{index.sid_of[c.id]}] {text}" for c, text, score in quotes[:40])
    run.details.update(chunks=[index.sid_of[c] for c, _ in near], quoted=len(picked))
    built = BuiltContext(context, sources, run.counter(context), config.reduce_max_tokens)
    if run.only_context:
        return run.result(built)
    if not lines:
        run.notes.append(f"no sentence is near the question (GlobalConfig.min_similarity={config.min_similarity})")
    return run.given(built, "\n".join(lines) or NO_DATA_ANSWER, stream=stream)


def nearest_sentences(index: SearchIndex, chunks: Sequence[Chunk], qvec: np.ndarray) -> list[Quote]:
    """Every sentence of `chunks` (once), nearest the question first."""
    found: dict[str, Chunk] = {}
    for chunk in chunks:
        for s, e in sentences_of(passage_of(chunk, "")):
            text = " ".join(chunk.text[s:e].split())
            if len(text.split()) >= MIN_WORDS:  # not a heading ("Presidential campaigns", "2008")
                found.setdefault(text, chunk)
    if not found:
        return []
    texts = list(found)
    sims = np.asarray(index.embed_texts(texts), dtype=np.float32) @ np.asarray(qvec, dtype=np.float32)
    return sorted(((found[t], t, float(x)) for t, x in zip(texts, sims)), key=lambda q: -q[2])


def themes_of(index: SearchIndex, globals_: GlobalIndex, quotes: Sequence[Quote]) -> list[int | None]:
    """Each quote's theme (a report id): the top-level summary covering its chunk, or the top-level community holding
    most of the entities its chunk mentions, each counted by how few chunks mention it, NAMED times for one the sentence
    names as words; None when no reported community holds any."""
    top = globals_.levels[0] if globals_.levels else 0
    reported = {r.community_id: rid for rid, r in globals_.at_level(top)}
    if globals_.covers is not None:
        return [next((r for cid, r in reported.items() if c.id in globals_.covers[cid]), None) for c, _, _ in quotes]
    community = {n: c for c in index.communities if c.level == top and c.id in reported for n in c.nodes}  # once
    themes: list[int | None] = []
    for chunk, sentence, _ in quotes:
        votes: Counter[str] = Counter()  # a name in most chunks ("Obama") says little about which theme this is
        for n in (n for n in index.graph_index.entities_in(chunk.id) if n in community):
            named = mentions(sentence.lower(), str(index.graph.nodes[n].get("name", n)).strip().lower())
            votes[community[n].id] += (NAMED if named else 1) / index.graph_index.chunk_count[index.graph_index.pos[n]]
        themes.append(reported[votes.most_common(1)[0][0]] if votes else None)
    return themes


def heading(index: SearchIndex, globals_: GlobalIndex, rid: int, group: Sequence[Quote]) -> str:
    """A theme's heading: the names of its community that its quoted sentences name, the fewest chunks' first (at most
    three; a name inside a longer one left out), else none. A report's title names the community's own entities, not
    the sentences quoted under it: the demo put the invasion of Iraq under "Chicago White Sox" (bench/RESULTS.md)."""
    report = globals_.reports[rid]
    if globals_.covers is not None:  # a tree summary: no community to take names from
        return report.title
    members = next((set(c.nodes) for c in index.communities if c.id == report.community_id), set())
    weight: Counter[str] = Counter()  # by lower-case name: "the Senate" and "Senate" are one
    shown: dict[str, str] = {}
    for chunk, text, _ in group:
        for n in index.graph_index.entities_in(chunk.id):
            name = re.sub(r"^the\s+", "", str(index.graph.nodes[n].get("name", n)).strip(), flags=re.IGNORECASE)
            key = name.lower()
            if n in members and (len(name) > 2 or not name.isascii()) and mentions(text.lower(), key):
                weight[key] += 1 / index.graph_index.chunk_count[index.graph_index.pos[n]]
                shown.setdefault(key, name)
    found = [key for key, _ in weight.most_common()]
    # "Harvard" and "Harvard Law" inside "Harvard Law Review": the longest says it
    return names_title([shown[k] for k in found if not any(k != m and mentions(m, k) for m in found)][:3])


def mentions(text: str, name: str) -> bool:
    """`name` in `text` as words ("Iran" not in "Iranian"); a name in a script written without spaces (Chinese), or
    one ending in punctuation ("U.S."), as it stands."""
    before = r"(?<!\w)" if name[:1].isascii() and name[:1].isalnum() else ""
    after = r"(?!\w)" if name[-1:].isascii() and name[-1:].isalnum() else ""
    return re.search(before + re.escape(name) + after, text) is not None
