"""Prompts of the three searches (after GraphRAG's, shortened for small local models).

Placeholders are replaced literally with `fill` (not str.format: the data contains braces).
"""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

NO_DATA_ANSWER = (
    "I do not know: the index holds no information relevant to this question."
)

ANSWER_SYSTEM = (
    "You are a careful assistant. You answer questions using only the data tables you are given. "
    "If the data does not contain the answer, say that you do not know; never make anything up."
)

# {citations} says which kinds of ids exist in this context.
ANSWER_USER = """---Data tables---
{context}
---End of data---

Answer the question below using only the data above. Keep the answer short. After each statement, cite its evidence as {citations}, using only ids that appear in the data tables above (at most 5 ids per citation; add "+more" when there are more). If the data does not answer the question, say so.

Question: {query}
"""

LOCAL_CITATIONS = "[Data: Sources (ids); Entities (ids); Relationships (ids); Reports (ids)]"
NAIVE_CITATIONS = "[Data: Sources (ids)]"

MAP_SYSTEM = (
    "You are an analyst. You extract the points of community reports that help answer a question, "
    "and you rate how helpful each point is."
)

MAP_USER = """---Community reports---
{context}
---End of reports---

List the key points of the reports above that help answer the question below, as JSON: {"points": [{"description": "...", "score": 0-100}]}.
- description: one point, ending with its evidence as [Data: Reports (ids)], using the ids of the reports above.
- score: how helpful the point is for answering the question, from 0 (not at all) to 100 (answers it).
If the reports do not help answer the question, return one point with score 0. Use only the data above.

Question: {query}
"""

REDUCE_USER = """---Analysts' key points (most helpful first)---
{context}
---End of key points---

The key points above were drawn from community reports of a knowledge graph; each cites its reports as [Data: Reports (ids)]. Write a short answer to the question below that combines the points. Keep each point's report citations, as [Data: Reports (ids)] (at most 5 ids per citation; add "+more" when there are more). If the points do not answer the question, say that you do not know.

Question: {query}
"""


def map_schema(max_points: int) -> dict[str, Any]:
    """The JSON schema a map answer is constrained to."""
    return {
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_points,
                "items": {
                    "type": "object",
                    "properties": {
                        # Bounded so a small model cannot loop inside one string.
                        "description": {"type": "string", "minLength": 1, "maxLength": 500},
                        "score": {"type": "integer", "minimum": 0, "maximum": 100},
                    },
                    "required": ["description", "score"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["points"],
        "additionalProperties": False,
    }


def fill(template: str, **values: str) -> str:
    """Replace {name} placeholders in one pass, so braces inside the values are left alone."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def answer_messages(context: str, query: str, citations: str) -> list[dict]:
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": fill(ANSWER_USER, context=context, query=query, citations=citations)},
    ]


def map_messages(context: str, query: str) -> list[dict]:
    return [
        {"role": "system", "content": MAP_SYSTEM},
        {"role": "user", "content": fill(MAP_USER, context=context, query=query)},
    ]


def reduce_messages(context: str, query: str) -> list[dict]:
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": fill(REDUCE_USER, context=context, query=query)},
    ]


def prompt_tokens(messages: list[dict], count) -> int:
    """Tokens of the message contents (the chat template's own tokens are covered by a margin)."""
    return sum(count(m.get("content") or "") for m in messages)
