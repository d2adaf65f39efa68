"""Build the Obama index offline and ask it questions in the three search modes.

    .venv/bin/python examples/quickstart.py            # the whole article
    EXAMPLE_CHARS=4000 .venv/bin/python examples/quickstart.py   # a quick look at the first 4,000 characters

Offline models only: spaCy en_core_web_sm (entities; relations by sentence co-occurrence),
all-MiniLM-L6-v2 (embeddings) and Qwen2.5-Coder-0.5B-Instruct, the small instruction-tuned GGUF
that `scripts/setup.sh` assembles into models/ (`EXAMPLE_LLM` picks another). With the default
models (`tiny-graphrag models download`) drop the `extractor`/`llm` overrides below.
"""

from __future__ import annotations

import os
from pathlib import Path

from tiny_graphrag import BuildConfig, CommunityConfig, ExtractionConfig, LLMConfig, QueryEngine, build_index
from tiny_graphrag.search.config import GlobalConfig, SearchConfig

ROOT = Path(__file__).resolve().parents[1]
text = (ROOT / "examples" / "data" / "barack_obama.txt").read_text(encoding="utf-8")
limit = int(os.environ.get("EXAMPLE_CHARS", "0"))
inputs = [text[:limit]] if limit else [ROOT / "examples" / "data" / "barack_obama.txt"]
out = ROOT / "graphs" / ("obama-sample" if limit else "obama")

config = BuildConfig(
    extraction=ExtractionConfig(extractor="spacy"),
    # short reports from a bounded context, only for communities of 5+ entities: a quick CPU-only build
    llm=LLMConfig(model=os.environ.get("EXAMPLE_LLM", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
                  max_report_tokens=300, report_context_tokens=1200,
                  report_min_size=1 if limit else 5),  # a short sample: report every community
    communities=CommunityConfig(max_cluster_size=40),
    models_dir=str(ROOT / "models"),
)
result = build_index(inputs, out, schema="general", config=config)
print(result.summary.format())

# Short answers: a small model's answer is its first sentence or two.
search = SearchConfig(answer_max_tokens=160, global_=GlobalConfig(map_max_tokens=160, reduce_max_tokens=160))
qe = QueryEngine(out, config=search)
for mode, question in [
    ("local", "Where did Barack Obama study law?"),
    ("global", "What are the main themes of Obama's presidency?"),
    ("naive", "When was Obama awarded the Nobel Peace Prize?"),
]:
    r = getattr(qe, f"{mode}_search")(question)
    print(f"\n== {mode}: {question}\n{r}\n(llm calls: {r.llm_calls}, sources: {len(r.sources.chunks)} chunks)")
