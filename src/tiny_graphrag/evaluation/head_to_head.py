"""Head-to-head evaluation of global answers, as in the GraphRAG paper (Edge et al. 2024, §4.1).

1. Questions: from a short description of the corpus, the model names users (personas), a few
   tasks per user, and per (user, task) questions that need the whole corpus to answer
   (`generate_questions`); or, cheaper, questions read off the top community reports
   (`questions_from_reports`).
2. Answers: two search modes of one `QueryEngine` answer every question (`collect_answers`).
3. Judging: an LLM judge sees the question, one criterion with its definition and the two
   answers, and names the better one (or a tie) with a short reason. Every pair is judged in
   both orders, because small judges favour a position; a verdict that flips with the order is
   the judge's noise, not a preference, so order agreement is reported as the trust measure.
4. Win rates: per criterion, the share of questions mode A wins (ties and split orders count
   half), with a 95% bootstrap interval over questions (`win_rates`).

Every model call goes through `llm.complete(..., schema=...)`: the grammar makes even a 135M
model's output parse, so a bad verdict is a wrong one, never a crash.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tiny_graphrag.backends.llm import LLM, open_llm
from tiny_graphrag.citations import strip_citations
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.evaluation.win_rates import Verdict, WinRate, win_rates
from tiny_graphrag.index.cache import CallCache
from tiny_graphrag.records import Report
from tiny_graphrag.tables import longest_fit

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.search.engine import QueryEngine

log = logging.getLogger(__name__)

# The paper's four criteria, its definitions in our words.
CRITERIA: dict[str, str] = {
    "comprehensiveness": "How much detail does the answer give to cover all aspects and details of the question?",
    "diversity": "How varied and rich is the answer in offering different perspectives and insights on the question?",
    "empowerment": "How well does the answer help the reader understand the topic and make informed judgements about it?",
    "directness": "How specifically and clearly does the answer address the question?",
}
MODES = ("global", "naive", "local")
_TEXT = 240  # characters per generated name/task/question/reason: short is enough and keeps small models from looping


def _text(max_length: int = _TEXT) -> dict:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


def _ask(llm: LLM, system: str, user: str, schema: dict, max_tokens: int) -> dict | None:
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


def _ask_list(llm: LLM, user: str, name: str, item: dict, n: int, max_tokens: int) -> list:
    """A list `name` of exactly `n` items (`item`: their schema) from the question writer; [] when unusable."""
    schema = {
        "type": "object",
        "properties": {name: {"type": "array", "items": item, "minItems": n, "maxItems": n}},
        "required": [name],
    }
    return (_ask(llm, _QG_SYSTEM, user, schema, max_tokens) or {}).get(name, [])


# ---- questions ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    text: str
    persona: str = ""  # who would ask it ("" for questions from reports)
    task: str = ""


# Say nothing about evaluating a system: a 0.5B model then names "a question-answering system" as a user.
_QG_SYSTEM = (
    "You imagine the real people who read a collection of texts, and what they want to learn from "
    "the collection as a whole."
)


def describe_corpus(engine: QueryEngine, *, words: int = 120, titles: int = 8) -> str:
    """A short description of an index's corpus: each document's opening and the top report titles."""
    docs = engine.store.documents()
    if not docs:
        raise InputError(f"index {engine.path} has no documents: build it from at least one file")
    parts = [f"{len(docs)} document(s)."]
    for d in docs[:3]:
        opening = " ".join(d.text.split()[:words])
        parts.append(f"Document {d.source or d.id} begins: {opening} ...")
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
        _check_count(name, count)
    if not description.strip():
        raise InputError("the corpus description is empty: pass a sentence or two saying what the texts are")
    n_users = math.ceil(n / (tasks * per_task))
    about = f"Description of the collection:\n{description}\n\n"
    users: dict[str, dict] = {}  # by lower-cased name: a name given twice is one user
    for user in _ask_list(
        llm,
        f"{about}Name {n_users} different kinds of people who would read this collection "
        "(for example a student, a journalist, a historian), each with one sentence on who they are "
        "and why they read it.",
        "users",
        {
            "type": "object",
            "properties": {"name": _text(60), "description": _text()},
            "required": ["name", "description"],
        },
        n_users,
        max_tokens,
    ):
        users.setdefault(user["name"].lower(), user)
    per_user: list[list[Question]] = []
    written: list[str] = []  # shown to later calls: greedy decoding repeats itself on repeated prompts
    for k, user in enumerate(users.values()):
        persona = f"{user['name']}: {user['description']}"
        log.info("questions: user %d/%d %s", k + 1, n_users, user["name"])
        mine = []
        for task in _ask_list(
            llm,
            f"{about}User: {persona}\n\nList {tasks} tasks this user would do with the whole collection.",
            "tasks",
            _text(),
            tasks,
            max_tokens,
        ):
            asked = "".join(f"\n- {q}" for q in written[-8:])
            prompt = (
                f"{about}User: {persona}\nTask: {task}\n\nWrite {per_task} question(s) this user would ask for "
                "this task. Each must need an understanding of the entire collection (themes, trends, "
                "comparisons), not one fact from one passage."
                + (f"\nAlready asked (write different ones):{asked}" if asked else "")
            )
            new = [q.strip() for q in _ask_list(llm, prompt, "questions", _text(), per_task, max_tokens)]
            written += new
            mine += [Question(q, persona, task) for q in new]
        per_user.append(mine)
    # round-robin over users, so a short list still covers them all
    ordered = [row[i] for i in range(max(map(len, per_user), default=0)) for row in per_user if i < len(row)]
    return _first_distinct(ordered, n, "personas")


def questions_from_reports(
    llm: LLM, reports: Sequence[Report], n: int, *, top: int = 12, max_tokens: int = 600
) -> list[Question]:
    """n global questions read off the `top` highest-rated community reports (one model call)."""
    _check_count("questions", n)
    usable = sorted((r for r in reports if not r.fallback), key=lambda r: -r.rating)[:top]
    if not usable:
        raise InputError(
            "the index has no community reports to read questions from: build it with an LLM "
            "(without --no-reports), or generate questions from personas"
        )
    listing = "\n".join(f"- {r.title}: {r.summary}" for r in usable)
    got = _ask_list(
        llm,
        (
            f"Summaries of the main communities of the collection:\n{listing}\n\nWrite {n} different questions that "
            "need an understanding of the whole collection (themes, trends, comparisons across communities), "
            "not one fact from one summary."
        ),
        "questions",
        _text(),
        n,
        max_tokens,
    )
    return _first_distinct([Question(q.strip()) for q in got], n, "reports")


def _first_distinct(questions: list[Question], n: int, how: str) -> list[Question]:
    seen, out = set(), []
    for q in questions:
        key = " ".join(q.text.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    if len(out) < n:
        log.warning("asked for %d questions (from %s), the model gave %d distinct ones", n, how, len(out))
    return out[:n]


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InputError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")


def _check_count(name: str, n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise InputError(f"{name} must be a whole number >= 1, got {n!r}")


# ---- answers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    mode: str
    question: str
    text: str
    seconds: float
    llm_calls: int


def collect_answers(engine: QueryEngine, questions: Sequence[Question], mode: str) -> list[Answer]:
    """Each question answered by one search mode of the engine."""
    _check_mode(mode)
    out = []
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        result = getattr(engine, f"{mode}_search")(q.text)
        out.append(Answer(mode, q.text, result.answer, round(time.perf_counter() - t0, 2), result.llm_calls))
        log.info("%s answer %d/%d in %.1fs", mode, i + 1, len(questions), out[-1].seconds)
    return out


# ---- judging -----------------------------------------------------------------------------------
_JUDGE_SYSTEM = (
    "You are an impartial judge. You compare two answers to the same question on one criterion "
    "only. The order of the answers says nothing about their quality, and a longer answer is not "
    "better unless the criterion says so."
)
_JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"reason": _text(), "winner": {"enum": ["1", "2", "tie"]}},
    "required": ["reason", "winner"],
}


def _judge_prompt(question: str, first: str, second: str, criterion: str, definition: str) -> str:
    # The criterion comes last, so the 4 criteria of one order share the prompt's prefix: llama.cpp
    # reuses the evaluated prefix, and the answers are read once per order, not once per criterion.
    return (
        f"Question: {question}\n\n---Answer 1---\n{first}\n---End of answer 1---\n\n---Answer 2---\n{second}\n"
        f"---End of answer 2---\n\nCriterion: {criterion}. {definition}\n\nWhich answer is better on this "
        'criterion alone? Give a short reason, then the winner: "1", "2" or "tie".'
    )


def clip(llm: LLM, text: str, max_tokens: int) -> str:
    """`text` cut to at most `max_tokens` tokens of `llm` (at a word boundary), so both answers fit the judge."""
    if llm.count_tokens(text) <= max_tokens:
        return text
    words = text.split()
    k = longest_fit(len(words), lambda m: llm.count_tokens(" ".join(words[:m])) <= max_tokens)
    return " ".join(words[:k]) + " ..."


def judge(
    llm: LLM,
    questions: Sequence[Question],
    a: Sequence[Answer],
    b: Sequence[Answer],
    *,
    criteria: dict[str, str] | None = None,
    answer_tokens: int = 700,
    max_tokens: int = 160,
) -> list[Verdict]:
    """Every (question, criterion) judged twice: A shown first, then B shown first.

    Citation markers are removed before judging: the modes cite different kinds of ids, which
    would tell the judge which mode wrote which answer."""
    criteria = CRITERIA if criteria is None else criteria
    if not criteria:
        raise InputError("no criteria to judge: pass at least one {name: definition}")
    if not (len(questions) == len(a) == len(b)):
        raise InputError(
            f"{len(questions)} questions but {len(a)} and {len(b)} answers: answer every question with both modes"
        )

    verdicts = []
    for i, q in enumerate(questions):
        ta, tb = (clip(llm, strip_citations(x.text), answer_tokens) or "(no answer)" for x in (a[i], b[i]))
        by_order = []  # A shown first, then B shown first: (winner, reason) per criterion
        for first, second, mode_of in (
            (ta, tb, {"1": "a", "2": "b", "tie": "tie"}),
            (tb, ta, {"1": "b", "2": "a", "tie": "tie"}),
        ):  # shown position -> mode
            got = [
                _ask(
                    llm,
                    _JUDGE_SYSTEM,
                    _judge_prompt(q.text, first, second, name, definition),
                    _JUDGE_SCHEMA,
                    max_tokens,
                )
                or {}
                for name, definition in criteria.items()
            ]
            by_order.append([(mode_of.get(g.get("winner")), str(g.get("reason", ""))) for g in got])
        verdicts += [Verdict(i, name, wa, wb, (ra, rb)) for name, (wa, ra), (wb, rb) in zip(criteria, *by_order)]
        log.info("judged question %d/%d", i + 1, len(questions))
    return verdicts


def open_judge(
    model: str | None,
    engine: QueryEngine,
    *,
    n_ctx: int | None = None,
    chat_format: str | None = None,
    cache: CallCache | None = None,
) -> LLM:
    """The judge: a GGUF by file name (under the models dir) or path, else the index's own LLM."""
    if model is None:
        return engine.llm
    return open_llm(
        LLMConfig(model=model, chat_format=chat_format, n_ctx=n_ctx or LLMConfig().n_ctx),
        models_dir=engine.models_dir,
        cache=cache,
    )


def read_questions(path: str | os.PathLike) -> list[Question]:
    """Questions from a text file, one per line (blank lines and lines starting with # skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read questions from {path} ({exc}): give a UTF-8 text file, one question a line"
        ) from exc
    qs = [Question(line.strip()) for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not qs:
        raise InputError(f"{path} holds no questions: write one question per line")
    return qs


# ---- the whole evaluation ----------------------------------------------------------------------
@dataclass
class Evaluation:
    """Questions, both modes' answers, every verdict and the win rates, with the settings used."""

    a: str
    b: str
    judge: str
    questions: list[Question]
    answers_a: list[Answer]
    answers_b: list[Answer]
    verdicts: list[Verdict]
    rates: list[WinRate]
    settings: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["verdicts"] = [{**asdict(v), "agree": v.agree, "score": v.score} for v in self.verdicts]
        return d

    def format(self) -> str:
        lines = [
            f"{self.a} vs {self.b} over {len(self.questions)} questions, judged by {self.judge} in both orders",
            f"{'criterion':<18} {self.a + ' win rate':>16} {'95% CI':>13} {'order agreement':>16} "
            f"{'95% CI':>13} {'first shown wins':>17}",
        ]
        for r in self.rates:
            agree = "-" if r.agreement is None else f"{r.agreement:.2f}"
            agree_ci = "" if r.agreement is None else f"[{r.agreement_low:.2f}, {r.agreement_high:.2f}]"
            first = "-" if r.first_wins is None else f"{r.first_wins:.2f}"
            lines.append(
                f"{r.criterion:<18} {r.win_rate:>16.2f} {f'[{r.low:.2f}, {r.high:.2f}]':>13} {agree:>16} "
                f"{agree_ci:>13} {first:>17}"
            )
        total = next((r for r in self.rates if r.criterion == "all"), None)
        if total is not None and total.agreement is not None and total.agreement < 0.7:
            lines.append(
                f"note: the judge named the same winner in both orders for only {total.agreement:.0%} of "
                "pairs: its verdicts are mostly noise; use a larger judge model (--judge)"
            )
        return "\n".join(lines)


def evaluate(
    engine: QueryEngine,
    judge_llm: LLM,
    *,
    questions: int | Sequence[Question] = 8,
    a: str = "global",
    b: str = "naive",
    source: str = "personas",
    description: str | None = None,
    criteria: dict[str, str] | None = None,
    answer_tokens: int = 700,
    resamples: int = 2000,
    seed: int = 0,
) -> Evaluation:
    """Generate (or take) questions, answer them with modes `a` and `b`, judge both orders, score.

    `judge_llm` writes the questions and judges; the engine's own LLM writes the answers."""
    if a == b:
        raise InputError(f"both modes are {a!r}: compare two different modes (e.g. a='global', b='naive')")
    for mode in (a, b):
        _check_mode(mode)
    t0 = time.perf_counter()
    if isinstance(questions, int):
        if source == "personas":
            qs = generate_questions(judge_llm, description or describe_corpus(engine), questions)
            if len(qs) < questions and engine.index.globals.reports:  # a small model repeats itself: top up
                extra = questions_from_reports(judge_llm, engine.index.globals.reports, questions)
                qs = _first_distinct(qs + extra, questions, "personas, then reports")
        elif source == "reports":
            qs = questions_from_reports(judge_llm, engine.index.globals.reports, questions)
        else:
            raise InputError(f"unknown question source {source!r}: choose 'personas' or 'reports'")
    else:
        qs = list(questions)
    if not qs:
        raise InputError("no questions to evaluate: the model wrote none; pass questions, or use a larger model")
    t1 = time.perf_counter()
    answers_a, answers_b = collect_answers(engine, qs, a), collect_answers(engine, qs, b)
    t2 = time.perf_counter()
    verdicts = judge(judge_llm, qs, answers_a, answers_b, criteria=criteria, answer_tokens=answer_tokens)
    t3 = time.perf_counter()
    return Evaluation(
        a,
        b,
        judge_llm.name,
        qs,
        answers_a,
        answers_b,
        verdicts,
        win_rates(verdicts, resamples=resamples, seed=seed),
        settings={
            "source": source if isinstance(questions, int) else "given",
            "answer_tokens": answer_tokens,
            "resamples": resamples,
            "seed": seed,
            "criteria": criteria or CRITERIA,
        },
        seconds={
            "questions": round(t1 - t0, 1),
            "answers": round(t2 - t1, 1),
            "judge": round(t3 - t2, 1),
            "total": round(t3 - t0, 1),
        },
    )
