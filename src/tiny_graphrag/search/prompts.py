"""Prompts of the searches (after GraphRAG's, shortened for small local models).

Placeholders are replaced literally with `fill` (not str.format: the data contains braces)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tiny_graphrag.reports.prompt import prompt_tokens as prompt_tokens  # counted as report prompts are

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

# Said without a model call when nothing in the index is relevant; the same plain phrase the
# answer prompt asks a model to write when its data does not hold the answer.
NO_DATA_ANSWER = "The context does not say: the index holds no information relevant to this question."
NOT_IN_CONTEXT = "The context does not say."

# Written for 0.5B-3B local models and chosen by measurement (bench/answers.py, Qwen2.5 0.5B, gold passages as the data,
# the tuning half of hotpotqa100; bench/RESULTS.md): one short paragraph of rules after the data, then the question,
# then "Answer:" as the slot to fill. Ending on "Answer:" is what made the 0.5B reader write a few words instead of a
# sentence; a fixed phrase for "not in the data" that it copies instead of guessing or echoing the instructions, placed
# before the question (as the last line, the model copied it even when the answer was in the data).
ANSWER_SYSTEM = "You answer questions using only the data you are given. Your answers are short and exact."

# {citations} says which kinds of ids exist in this context.
ANSWER_USER = (
    """---Data---
{context}
---End of data---

Use only the data above. Answer in a few words (a name, a place, a date, a number, or yes/no), then cite the ids of the rows that support it as {citations}. If the data does not contain the answer, write: """
    + NOT_IN_CONTEXT
    + """

Question: {query}
Answer:"""
)

# The small reader's prompt (answers.py: reader="small"): the evidence, the question, and what to
# reply with, nothing else; no citations and no refusal phrase are asked of it (reader.py attaches
# the first; retrieval thresholds decide the second).
READER_SYSTEM = (
    "You answer questions from the passages you are given. You reply with the answer only, never a sentence."
)
READER_USER = """{context}

Question: {query}
Reply with {form}.
Answer:"""
READER_FORMS = {
    "factoid": "the answer only: a name, a place, a date, a number or a few words from the passages",
    "list": "a short list of the answers from the passages, separated by semicolons",
    "yesno": "yes or no",
    "number": "the answer only: a date, a year or a number from the passages",
}
NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen "
    "nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion dozen half"
)
READER_MAX_TOKENS = {"factoid": 32, "number": 64, "list": 120, "yesno": 2}
# The answer's shape, enforced while it is decoded (llama.cpp's GBNF): one line of at most 10 words (a 0.5B reader asked
# for "a few words" still wrote sentences restating the question), then at most a space (a reader wanting an 11th word
# stops there instead of gluing it on: "KoreanConflict"), a list, or yes/no. "[" never: it would start an id.
READER_GRAMMARS = {
    "factoid": 'root ::= word (" " word){0,9} " "?\nword ::= [^ \\t\\n\\[]+\n',
    "list": "root ::= [^\\[ \\t\\n] [^\\[\\n]*\n",
    "yesno": 'root ::= "yes" | "no"\n',
    # a date or a number: a word with a digit or a number word first or second ("August 4, 1961", "a dozen"; short
    # words, so that it comes within READER_MAX_TOKENS whatever the model would rather write)
    "number": 'root ::= (word " ")? (num | spelt ("-" word | "s")?) (" " word){0,3}\nword ::= [^ \\t\\n\\[]{1,12}\n'
    "num ::= [^ \\t\\n\\[0-9]{0,12} [0-9] [^ \\t\\n\\[]{0,12}\nspelt ::= "
    + " | ".join(f'[{w[0]}{w[0].upper()}] "{w[1:]}"' for w in NUMBER_WORDS.split())
    + "\n",
}


NAIVE_CITATIONS = "[Data: Sources (ids)]"
# Local search asks for the same form: naming all four id kinds made the 0.5B reader answer with
# ids alone (bench/RESULTS.md). Ids of the other tables a model cites anyway still resolve.
LOCAL_CITATIONS = NAIVE_CITATIONS

MAP_SYSTEM = (
    "You are an analyst. You choose the findings of community reports that help answer a question, "
    "and you rate how helpful each one is."
)

# The question comes first as well as last: a 0.5B model read reports without it in mind and scored unrelated reports
# 80-100 (bench/RESULTS.md, the map probe). The model chooses findings by id instead of writing points: written, a 0.5B
# model's points restated the question or paraphrased a report into claims it does not make ("a major political and
# military organization ... with 13 million members"); chosen, every point is a finding's own words.
MAP_USER = """Question: {query}

---Findings of community reports---
{context}
---End of findings---

Choose the findings above that help answer the question "{query}", as JSON: {"points": [{"finding": "id", "score": 0-100}]}.
- finding: the id of one finding above (its first column).
- score: 0 when the finding is not about what the question asks, up to 100 when it answers it.
If no finding is about the question, return one point with score 0.
"""

# The reduce call writes the final answer (GraphRAG's reduce: a response that summarizes the
# analysts' points). It must serve both a question about one fact (the answer first, in its
# first sentence, which is what bench/answers.py scores) and one about the whole corpus ("main
# themes": the main points, each cited), and may say "The context does not say" as GraphRAG's does.
REDUCE_SYSTEM = "You answer questions using only the analysts' key points you are given. You are accurate and concise."

REDUCE_USER = (
    """---Analysts' key points (most important first)---
{context}
---End of key points---

Each key point above was written by an analyst who read part of the data, and cites its reports as [Data: Reports (ids)]. Using only these points, answer the question below. Start with the answer itself in one short sentence. If the question is about a whole topic (themes, trends, an overview), then give the main points in a few short sentences, most important first. End each sentence with the reports that support it as [Data: Reports (ids)]. If no key point is relevant to the question, write: """
    + NOT_IN_CONTEXT
    + """

Question: {query}
Answer:"""
)


def map_schema(max_points: int, findings: Sequence[str]) -> dict[str, Any]:
    """The JSON schema a map answer is constrained to: at most `max_points` points naming findings
    of its batch (by id); unhelpful ones score 0."""
    most = max(1, min(max_points, len(findings)))
    return {
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "minItems": 1,
                "maxItems": most,
                "items": {
                    "type": "object",
                    "properties": {
                        "finding": {"enum": list(findings)},
                        "score": {"type": "integer", "minimum": 0, "maximum": 100},
                    },
                    "required": ["finding", "score"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["points"],
        "additionalProperties": False,
    }


def answer_grammar(ids: Mapping[str, Sequence[int]]) -> str:
    """The GBNF grammar of an answer: words first, one line, and "[" only to open a citation of
    shown ids (`ids`: citation kind -> the ids of that table in the context).

    Small readers answered about one question in four with a citation alone ("[4196973]") or an
    empty line before it, and some cited ids they were never shown; the grammar rules both out."""
    kinds = [(kind, values) for kind, values in ids.items() if values]
    rules = ["root ::= [^\\[ \\t\\n] " + ("([^\\[\\n] | cite)*" if kinds else "[^\\[\\n]*")]
    if kinds:
        rules.append('cite ::= "[Data: " part ("; " part)* "]"')
        rules.append(
            "part ::= " + " | ".join(f'"{kind} (" id{n} (", " id{n})* ")"' for n, (kind, _) in enumerate(kinds))
        )
        rules += [
            f"id{n} ::= " + " | ".join(f'"{int(v)}"' for v in dict.fromkeys(values))
            for n, (_, values) in enumerate(kinds)
        ]
    return "\n".join(rules) + "\n"


def fill(template: str, **values: str) -> str:
    """Replace {name} placeholders in one pass, so braces inside the values are left alone."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _chat(system: str, template: str, **values: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": fill(template, **values)}]


def answer_messages(context: str, query: str, citations: str) -> list[dict]:
    return _chat(ANSWER_SYSTEM, ANSWER_USER, context=context, query=query, citations=citations)


def reader_messages(context: str, query: str, form: str) -> list[dict]:
    return _chat(READER_SYSTEM, READER_USER, context=context, query=query, form=READER_FORMS[form])


def map_messages(context: str, query: str) -> list[dict]:
    return _chat(MAP_SYSTEM, MAP_USER, context=context, query=query)


def reduce_messages(context: str, query: str) -> list[dict]:
    return _chat(REDUCE_SYSTEM, REDUCE_USER, context=context, query=query)
