"""Questions for the head-to-head evaluation (GraphRAG §4.1): generated from personas and tasks, read off the top
community reports, or read from a file; and the constrained model calls that ask."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tiny_graphrag.backends.llm import LLM
from tiny_graphrag.errors import InputError
from tiny_graphrag.indexing.readers.text import decode
from tiny_graphrag.records import Report

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.search.engine import QueryEngine

log = logging.getLogger(__name__)


MODES = ("global", "naive", "local")
# characters per generated name/task/question/reason: short is enough and keeps small models from looping
TEXT_CHARS = 240


def text_field(max_length: int = TEXT_CHARS) -> dict:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


def object_schema(**properties: dict) -> dict:
    """The JSON schema of an object with these properties, all required."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def ask(llm: LLM, system: str, user: str, schema: dict, max_tokens: int) -> dict | None:
    """One grammar-constrained call; None when the output is still not usable JSON (cut at max_tokens)."""
    out = llm.complete(
        [{"role": "system", "content": system}, {"role": "user", "content": user}], schema=schema, max_tokens=max_tokens
    )
    try:
        data = json.loads(out.text)
    except json.JSONDecodeError:
        log.warning("unusable JSON from %s (finish=%s): %.200r", llm.name, out.finish_reason, out.text)
        return None
    return data if isinstance(data, dict) else None


def ask_list(llm: LLM, user: str, name: str, item: dict, n: int, max_tokens: int) -> list:
    """A list `name` of exactly `n` items (`item`: their schema) from the question writer; [] when unusable."""
    schema = object_schema(**{name: {"type": "array", "items": item, "minItems": n, "maxItems": n}})
    return (ask(llm, QG_SYSTEM, user, schema, max_tokens) or {}).get(name, [])


@dataclass(frozen=True)
class Question:
    text: str
    persona: str = ""  # who would ask it ("" for questions from reports)
    task: str = ""


# Say nothing about evaluating a system: a 0.5B model then names "a question-answering system" as a user.
QG_SYSTEM = (
    "You imagine the real people who read a collection of texts, and what they want to learn from "
    "the collection as a whole."
)


def describe_corpus(engine: QueryEngine, *, words: int = 120, titles: int = 8) -> str:
    """A short description of an index's corpus: each document's opening and the top report titles."""
    docs = engine.store.documents()
    if not docs:
        raise InputError(f"index {engine.path} has no documents: build it from at least one file")
    parts = [f"{len(docs)} document(s)."]
    parts += [f"Document {d.source or d.id} begins: {' '.join(d.text.split()[:words])} ..." for d in docs[:3]]
    top = sorted((r for r in engine.index.globals.reports if not r.fallback), key=lambda r: -r.rating)[:titles]
    if top:
        parts.append("Main topics: " + "; ".join(r.title for r in top) + ".")
    return "\n".join(parts)


def generate_questions(
    llm: LLM, description: str, n: int, *, tasks: int = 2, per_task: int = 1, max_tokens: int = 400
) -> list[Question]:
    """The paper's personas -> tasks -> questions: ceil(n / (tasks*per_task)) users, `tasks` tasks
    each, `per_task` questions per (user, task); the first `n` distinct questions, taken
    round-robin over users so a short list still covers them all."""
    for name, count in (("questions", n), ("tasks", tasks), ("per_task", per_task)):
        check_count(name, count)
    if not description.strip():
        raise InputError("the corpus description is empty: pass a sentence or two saying what the texts are")
    n_users = math.ceil(n / (tasks * per_task))
    about = f"Description of the collection:\n{description}\n\n"
    prompt = (
        f"{about}Name {n_users} different kinds of people who would read this collection (for example a student, a "
        "journalist, a historian), each with one sentence on who they are and why they read it."
    )
    user_schema = object_schema(name=text_field(60), description=text_field())
    users: dict[str, dict] = {}  # by lower-cased name: a name given twice is one user
    for user in ask_list(llm, prompt, "users", user_schema, n_users, max_tokens):
        users.setdefault(user["name"].lower(), user)
    per_user: list[list[Question]] = []
    written: list[str] = []  # shown to later calls: greedy decoding repeats itself on repeated prompts
    for k, user in enumerate(users.values()):
        persona = f"{user['name']}: {user['description']}"
        log.info("questions: user %d/%d %s", k + 1, n_users, user["name"])
        mine = []
        tasks_prompt = f"{about}User: {persona}\n\nList {tasks} tasks this user would do with the whole collection."
        for task in ask_list(llm, tasks_prompt, "tasks", text_field(), tasks, max_tokens):
            asked = "".join(f"\n- {q}" for q in written[-8:])
            prompt = (
                f"{about}User: {persona}\nTask: {task}\n\nWrite {per_task} question(s) this user would ask for "
                "this task. Each must need an understanding of the entire collection (themes, trends, "
                "comparisons), not one fact from one passage."
                + (f"\nAlready asked (write different ones):{asked}" if asked else "")
            )
            new = [q.strip() for q in ask_list(llm, prompt, "questions", text_field(), per_task, max_tokens)]
            written += new
            mine += [Question(q, persona, task) for q in new]
        per_user.append(mine)
    # round-robin over users, so a short list still covers them all
    ordered = [row[i] for i in range(max(map(len, per_user), default=0)) for row in per_user if i < len(row)]
    return first_distinct(ordered, n, "personas")


def questions_from_reports(
    llm: LLM, reports: Sequence[Report], n: int, *, top: int = 12, max_tokens: int = 600
) -> list[Question]:
    """n global questions read off the `top` highest-rated community reports (one model call)."""
    check_count("questions", n)
    usable = sorted((r for r in reports if not r.fallback), key=lambda r: -r.rating)[:top]
    if not usable:
        raise InputError(
            "the index has no community reports to read questions from: build it with an LLM "
            "(without --no-reports), or generate questions from personas"
        )
    listing = "\n".join(f"- {r.title}: {r.summary}" for r in usable)
    prompt = (
        f"Summaries of the main communities of the collection:\n{listing}\n\nWrite {n} different questions that "
        "need an understanding of the whole collection (themes, trends, comparisons across communities), "
        "not one fact from one summary."
    )
    got = ask_list(llm, prompt, "questions", text_field(), n, max_tokens)
    return first_distinct([Question(q.strip()) for q in got], n, "reports")


def first_distinct(questions: list[Question], n: int, how: str) -> list[Question]:
    seen, out = set(), []
    for q in questions:
        key = " ".join(q.text.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    if len(out) < n:
        log.warning("asked for %d questions (from %s), the model gave %d distinct ones", n, how, len(out))
    return out[:n]


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InputError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")


def check_count(name: str, n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise InputError(f"{name} must be a whole number >= 1, got {n!r}")


def read_questions(path: str | os.PathLike[str]) -> list[Question]:
    """Questions from a text file, one per line (blank lines and lines starting with # skipped)."""
    fix = "give a UTF-8 text file, one question a line"
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read questions from {path} ({exc}): {fix}") from exc
    # decoded as documents are: a binary file is refused (its "lines" would be asked as questions)
    lines = decode(data, path, binary_fix=f"and holds no questions: {fix}").splitlines()
    qs = [Question(line.strip()) for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not qs:
        raise InputError(f"{path} holds no questions: write one question per line")
    return qs
