"""The community report request: its JSON schema and its chat messages.

String lengths in the schema are bounded so a small model cannot loop inside one string: a full
report is at most ~3,300 characters (~850 tokens), near the default max_report_tokens=800.
Findings come last so a truncated output can be repaired by dropping the unfinished finding.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 80},
        "summary": {"type": "string", "minLength": 1, "maxLength": 500},
        "rating": {"type": "number", "minimum": 0, "maximum": 10},
        "rating_explanation": {"type": "string", "maxLength": 150},
        "findings": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "minLength": 1, "maxLength": 120},
                    "explanation": {"type": "string", "minLength": 1, "maxLength": 400},
                },
                "required": ["summary", "explanation"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["title", "summary", "rating", "rating_explanation", "findings"],
    "additionalProperties": False,
}


def report_schema(max_report_tokens: int = 800) -> dict[str, Any]:
    """REPORT_SCHEMA with string and list bounds scaled to the output budget.

    A small base model fills every string up to its maxLength, so the bounds decide how long
    (and how slow) a report is; at 800 tokens this is REPORT_SCHEMA itself.
    """
    f = min(1.0, max_report_tokens / 800)
    schema = copy.deepcopy(REPORT_SCHEMA)
    props = schema["properties"]
    finding = props["findings"]["items"]["properties"]
    for spec, floor in ((props["title"], 40), (props["summary"], 120), (props["rating_explanation"], 60),
                        (finding["summary"], 40), (finding["explanation"], 100)):
        spec["maxLength"] = max(floor, int(spec["maxLength"] * f))
    props["findings"]["maxItems"] = max(1, min(5, round(5 * f)))
    return schema


REPORT_SYSTEM_PROMPT = (
    "You are an analyst. You write short, factual reports about communities of entities in a "
    "knowledge graph, using only the data you are given."
)

# `{context}` is replaced literally (not str.format: the data may contain braces).
REPORT_USER_PROMPT = """Write a report about the community described by the data below, as JSON with:
- title: a short name for the community that names its key entities
- summary: an executive summary of how the community's entities relate
- rating: a number from 0 to 10 for how important the community is
- rating_explanation: one sentence explaining the rating
- findings: 1 to 5 key insights, each with a one-line summary and an explanation grounded in the data

End each explanation with its evidence as [Data: Entities (ids); Relationships (ids); Sources (ids)], using only ids listed in the tables below. Do not invent facts or ids.

{context}
"""


def report_messages(context_text: str) -> list[dict]:
    """The chat messages of one report request."""
    return [
        {"role": "system", "content": REPORT_SYSTEM_PROMPT},
        {"role": "user", "content": REPORT_USER_PROMPT.replace("{context}", context_text)},
    ]


def prompt_tokens(messages: Sequence[Mapping[str, Any]], count_tokens: Callable[[str], int]) -> int:
    """Tokens of the message contents (the chat template's own tokens are not included)."""
    return sum(count_tokens(m.get("content") or "") for m in messages)
