"""A deterministic, extractive stand-in for the report writer, and the shared Obama index.

Real reports from the only offline GGUF (Gemma 3 270M) take ~30 s each on 2 CPU cores, and the
Obama article's graph has hundreds of communities: hours. Sections that need an index with a
report for every community (global-search calls, local-search latency) use reports written by
this stand-in instead: it fills the report schema from the prompt's own data tables (entity
names, relationships, source snippets), cut to the schema's length limits, so the report
*lengths* are in the range a real model produces under the same schema (the global section also
measures an index whose reports Gemma wrote, and reports both lengths). It is a FakeLLM: the
build runs its real code path (context building, constrained output parsing, citations).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from .common import Context, graph_counts, obama_slice, obama_text, spacy_extraction_config

_SECTION = re.compile(r"^-----(\w+)-----$", re.M)


def _sections(text: str) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    parts = _SECTION.split(text)
    for name, body in zip(parts[1::2], parts[2::2]):
        rows = list(csv.reader(io.StringIO(body.strip()), delimiter="|", quoting=csv.QUOTE_NONE))
        out[name.lower()] = rows[1:]  # drop the header row
    return out


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    if len(text) <= n:
        return text
    cut = text[:n].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") or text[:n]


def standin_report(messages: list[dict], schema: dict | None, max_tokens: int) -> dict[str, Any]:
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    data = _sections(user)
    ents = [r for r in data.get("entities", []) if len(r) >= 3]
    rels = [r for r in data.get("relationships", []) if len(r) >= 4]
    srcs = {r[0]: r[1] for r in data.get("sources", []) if len(r) >= 2}
    subs = [r for r in data.get("reports", []) if len(r) >= 2]
    names = [r[1] for r in ents[:3]] or [r[0] for r in subs[:3]] or ["unnamed entities"]
    title = "Community of " + ", ".join(names)
    lead = next(iter(srcs.values()), "") or (subs[0][1] if subs else "")
    summary = (
        f"This community centres on {', '.join(names)}, with {len(ents)} entities and "
        f"{len(rels)} relationships in the data. {lead}"
    )
    findings = []
    for rid, head, tail, label, *_ in rels[:5]:
        src_id, src = next(iter(srcs.items()), ("", ""))
        cite = f" [Data: Relationships ({rid})" + (f"; Sources ({src_id})]" if src_id else "]")
        findings.append(
            {
                "summary": _clip(f"{head} {label} {tail}", 150),
                "explanation": _clip(f"{head} is linked to {tail} ({label}). {src}", 560) + cite,
            }
        )
    for title_, text in subs[: max(0, 5 - len(findings))]:
        findings.append({"summary": _clip(title_, 150), "explanation": _clip(text, 600)})
    if not findings:
        findings.append({"summary": _clip(names[0], 150), "explanation": _clip(lead or title, 600)})
    return {
        "title": _clip(title, 100),
        "summary": _clip(summary, 600),
        "rating": float(min(10, 1 + len(ents) // 2)),
        "rating_explanation": _clip(f"Rated by the size of the community ({len(ents)} entities).", 200),
        "findings": findings,
    }


def standin_llm(n_ctx: int = 4096):
    from tests._fakes import FakeLLM

    return FakeLLM(standin_report, n_ctx=n_ctx, name="extractive-standin")


def obama_index(ctx: Context) -> dict[str, Any]:
    """The full Obama article indexed with the spaCy extractor and stand-in reports (built once per run)."""

    def make() -> dict[str, Any]:
        from tiny_graphrag.config import BuildConfig
        from tiny_graphrag.indexing.pipeline import build_index

        folder = ctx.work / "obama"
        folder.mkdir(parents=True, exist_ok=True)
        src = folder / "barack_obama.txt"
        text = obama_slice(ctx.mode.obama_tokens) if ctx.mode.obama_tokens else obama_text()
        src.write_text(text, encoding="utf-8")
        cfg = BuildConfig(extraction=spacy_extraction_config(), cache_dir=str(folder / "cache"))
        result = build_index([str(src)], folder / "index", config=cfg, llm=standin_llm(), progress=False)
        s = result.summary
        return {
            "path": result.path,
            "summary": {
                "corpus": f"first {ctx.mode.obama_tokens} tokens of the Obama article"
                if ctx.mode.obama_tokens
                else "the whole Obama article",
                **graph_counts(s),
                "reports": s.reports,
                "seconds_per_stage": s.seconds_per_stage,
            },
        }

    return ctx.once("obama_index", make)


def index_path(info: dict[str, Any]) -> Path:
    return Path(info["path"])
