"""Prompts of the three searches (after GraphRAG's, shortened for small local models).

Placeholders are replaced literally with `fill` (not str.format: the data contains braces).
"""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

# Said without a model call when nothing in the index is relevant; the same plain phrase the
# answer prompt asks a model to write when its data does not hold the answer.
NO_DATA_ANSWER = "The context does not say: the index holds no information relevant to this question."
NOT_IN_CONTEXT = "The context does not say."

# Written for 0.5B-3B local models and chosen by measurement (bench/answers.py, Qwen2.5 0.5B,
# gold passages as the data, the tuning half of hotpotqa100; bench/RESULTS.md): one short
# paragraph of rules after the data, then the question, then "Answer:" as the slot to fill.
# Ending on "Answer:" is what made the 0.5B reader write a few words instead of a sentence; a
# fixed phrase for "not in the data" that it copies instead of guessing or echoing the
# instructions, placed before the question (as the last line, the model copied it even when
# the answer was in the data).
ANSWER_SYSTEM = "You answer questions using only the data you are given. Your answers are short and exact."

# {citations} says which kinds of ids exist in this context.
ANSWER_USER = """---Data---
{context}
---End of data---

Use only the data above. Answer in a few words (a name, a place, a date, a number, or yes/no), then cite the ids of the rows that support it as {citations}. If the data does not contain the answer, write: """ + NOT_IN_CONTEXT + """

Question: {query}
Answer:"""

NAIVE_CITATIONS = "[Data: Sources (ids)]"
# Local search asks for the same form: naming all four id kinds made the 0.5B reader answer with
# ids alone (bench/RESULTS.md). Ids of the other tables a model cites anyway still resolve.
LOCAL_CITATIONS = NAIVE_CITATIONS

MAP_SYSTEM = (
    "You are an analyst. You extract the points of community reports that help answer a question, "
    "and you rate how helpful each point is."
)

# The question comes first as well as last: a 0.5B model read reports without it in mind and
# scored unrelated reports 80-100 (bench/RESULTS.md, the map probe). A point must be a fact
# from the reports; the question restated as a finding was its commonest wrong point.
MAP_USER = """Question: {query}

---Community reports---
{context}
---End of reports---

List the facts in the reports above that help answer the question "{query}", as JSON: {"points": [{"description": "...", "score": 0-100}]}.
- description: one fact the reports state, ending with its evidence as [Data: Reports (ids)], using the ids of the reports above. Never restate the question as a fact.
- score: 0 when the fact is not about what the question asks, up to 100 when it answers it.
If no report is about the question, return one point with score 0.
"""

# The reduce call writes the final answer (GraphRAG's reduce: a response that summarizes the
# analysts' points). It must serve both a question about one fact (the answer first, in its
# first sentence, which is what bench/answers.py scores) and one about the whole corpus ("main
# themes": the main points, each cited). The way out, "The context does not say", is offered only
# when the map model itself scored every point 0 (points kept by grounding alone): offered always,
# a 0.5B reduce took it with the map's relevant points in front of it (bench/RESULTS.md).
REDUCE_DECLINE = " If no key point is relevant to the question, write: " + NOT_IN_CONTEXT
REDUCE_SYSTEM = "You answer questions using only the analysts' key points you are given. You are accurate and concise."

REDUCE_USER = """---Analysts' key points (most important first)---
{context}
---End of key points---

Each key point above was written by an analyst who read part of the data, and cites its reports as [Data: Reports (ids)]. Using only these points, answer the question below. Start with the answer itself in one short sentence. If the question is about a whole topic (themes, trends, an overview), then give the main points in a few short sentences, most important first. End each sentence with the reports that support it as [Data: Reports (ids)].{decline}

Question: {query}
Answer:"""


MIN_MAP_POINTS = 3  # a 0.5B model stopped after one point, which left a reduce for "main themes" one fact


def map_schema(max_points: int, max_tokens: int = 400) -> dict[str, Any]:
    """The JSON schema a map answer is constrained to: at least MIN_MAP_POINTS points (fewer when
    `max_points` is lower), so a small model reads past its first fact; unhelpful ones score 0.

    Descriptions are bounded so that `max_points` full ones fit in `max_tokens` (~3 characters a
    token, ~10 tokens of JSON per point): a small model fills a string up to its bound, and with
    500 characters each its third point ran past 400 tokens and the whole answer was cut off."""
    per_point = max(1, (max_tokens - 10) // max(1, max_points) - 10)
    description_chars = max(80, min(500, 3 * per_point))
    return {
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "minItems": max(1, min(MIN_MAP_POINTS, max_points)),
                "maxItems": max_points,
                "items": {
                    "type": "object",
                    "properties": {
                        # Bounded so a small model cannot loop inside one string.
                        "description": {"type": "string", "minLength": 1, "maxLength": description_chars},
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


def reduce_messages(context: str, query: str, *, may_decline: bool = True) -> list[dict]:
    """`may_decline`: offer the "does not say" answer (see REDUCE_USER)."""
    decline = REDUCE_DECLINE if may_decline else ""
    return [
        {"role": "system", "content": REDUCE_SYSTEM},
        {"role": "user", "content": fill(REDUCE_USER, context=context, query=query, decline=decline)},
    ]


def prompt_tokens(messages: list[dict], count) -> int:
    """Tokens of the message contents (the chat template's own tokens are covered by a margin)."""
    return sum(count(m.get("content") or "") for m in messages)
