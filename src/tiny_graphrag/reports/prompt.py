"""The community report request: its JSON schema and its chat messages.

String lengths in the schema are bounded so a small model cannot loop inside one string: a full report is at most ~3,300
characters (~850 tokens), near the default max_report_tokens=800.

The grammar makes the model write the properties in the order given here, evidence first: the findings, each explanation
before its one-line summary, then the rating, the executive summary and last the title. Written in GraphRAG's order
(title and summary first), the 0.5B model's reports held about half as much of their data's wording (bench/RESULTS.md,
"Community reports written evidence first"): a summary written first is generic ("a diverse and complex community"), and
the findings then follow it."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_FINDING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string", "minLength": 1, "maxLength": 400},
        "summary": {"type": "string", "minLength": 1, "maxLength": 120},
    },
    "required": ["explanation", "summary"],
    "additionalProperties": False,
}

REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "findings": {"type": "array", "minItems": 1, "maxItems": 5, "items": _FINDING},
        "rating": {"type": "number", "minimum": 0, "maximum": 10},
        "rating_explanation": {"type": "string", "maxLength": 150},
        "summary": {"type": "string", "minLength": 1, "maxLength": 500},
        "title": {"type": "string", "minLength": 1, "maxLength": 80},
    },
    "required": ["findings", "rating", "rating_explanation", "summary", "title"],
    "additionalProperties": False,
}


def report_schema(max_report_tokens: int = 800, sources: Sequence[int] = ()) -> dict[str, Any]:
    """REPORT_SCHEMA with string and list bounds scaled to the output budget.

    A small model fills most strings up to their maxLength, so the bounds decide how long (and how slow) a report is; a
    string stopped there is cut back to a boundary afterwards (reports.parse.end_at_boundary). Longer bounds at small
    budgets (room for a whole sentence each) gave longer, less grounded reports (bench/RESULTS.md). At 800 tokens this
    is REPORT_SCHEMA itself.

    With `sources` (the ids of the context's Sources rows) a finding is grounded: the model chooses the row that states
    it (`source`, one of these ids) and writes its one-line summary; the report quotes that row's text as the
    explanation (reports.generate). The 0.5B model's own explanations were mostly invented ("Chicago is a religious
    organization"), and global search passed them on as facts; chosen rows are the data's own words."""
    f = min(1.0, max_report_tokens / 800)
    schema = copy.deepcopy(REPORT_SCHEMA)
    props, findings = schema["properties"], schema["properties"]["findings"]
    finding = findings["items"]["properties"]
    for spec, floor in (
        (props["title"], 40),
        (props["summary"], 120),
        (props["rating_explanation"], 60),
        (finding["summary"], 40),
        (finding["explanation"], 100),
    ):
        spec["maxLength"] = max(floor, int(spec["maxLength"] * f))
    findings["maxItems"] = max(1, min(5, round(5 * f)))
    if sources:
        findings["items"]["properties"] = {"source": {"enum": sorted(set(sources))}, "summary": finding["summary"]}
        findings["items"]["required"] = ["source", "summary"]
        findings["maxItems"] = min(findings["maxItems"], len(set(sources)))
    return schema


REPORT_SYSTEM_PROMPT = (
    "You are an analyst. You write short, factual reports about communities of entities in a "
    "knowledge graph, using only the data you are given."
)

# The placeholders are replaced literally (not str.format: the data may contain braces), `{context}`
# last so that data cannot fill the others.
REPORT_USER_PROMPT = """Write a report about the community described by the data below, as JSON with:
- title: a short name for the community that names its key entities
- summary: an executive summary of how the community's entities relate
- rating: a number from 0 to 10 for how important the community is
- rating_explanation: one sentence explaining the rating
{findings}

End {evidence} with its evidence as [Data: Entities (ids); Relationships (ids); Sources (ids)], using only ids listed in the tables below. Do not invent facts or ids.

{context}
"""

# The findings of a context with Sources rows (report_schema's `sources`): chosen rows, not prose.
GROUNDED_FINDINGS = (
    "- findings: 1 to 5 key facts about the community, each the id of the Sources row that states it "
    "(source) and a one-line summary of that fact"
)
FREE_FINDINGS = "- findings: 1 to 5 key insights, each with a one-line summary and an explanation grounded in the data"


def report_messages(context_text: str, grounded: bool = False) -> list[dict]:
    """The chat messages of one report request; `grounded`: findings are chosen Sources rows."""
    user = (
        REPORT_USER_PROMPT.replace("{findings}", GROUNDED_FINDINGS if grounded else FREE_FINDINGS)
        .replace("{evidence}", "the summary" if grounded else "each explanation")
        .replace("{context}", context_text)
    )
    return [{"role": "system", "content": REPORT_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def prompt_tokens(messages: Sequence[Mapping[str, Any]], count_tokens: Callable[[str], int]) -> int:
    """Tokens of the message contents (the chat template's own tokens are not included)."""
    return sum(count_tokens(m.get("content") or "") for m in messages)
