"""Head-to-head evaluation of global answers, as in the GraphRAG paper (Edge et al. 2024, §4.1).

1. Questions: from a short description of the corpus, the model names users (personas), a few tasks per user, and per
   (user, task) questions that need the whole corpus to answer (`generate_questions`); or, cheaper, questions read off
   the top community reports (`questions_from_reports`).
2. Answers: two search modes of one `QueryEngine` answer every question (`collect_answers`).
3. Judging: an LLM judge sees the question, one criterion with its definition and the two answers, and names the better
   one (or a tie) with a short reason. Every pair is judged in both orders, because small judges favour a position; a
   verdict that flips with the order is the judge's noise, not a preference, so order agreement is reported as the trust
   measure.
4. Win rates: per criterion, the share of questions mode A wins (ties and split orders count half), with a 95% bootstrap
   interval over questions (`win_rates`).

Every model call goes through `llm.complete(..., schema=...)`: the grammar makes even a 135M model's output parse, so a
bad verdict is a wrong one, never a crash."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from tiny_graphrag.backends.llm import LLM, open_llm
from tiny_graphrag.citations import strip_citations
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.errors import InputError
from tiny_graphrag.evaluation.questions import (
    Question,
    ask,
    check_mode,
    describe_corpus,
    first_distinct,
    generate_questions,
    object_schema,
    questions_from_reports,
    text_field,
)
from tiny_graphrag.evaluation.win_rates import Verdict, WinRate, win_rates
from tiny_graphrag.index.cache import CallCache
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


@dataclass(frozen=True)
class Answer:
    mode: str
    question: str
    text: str
    seconds: float
    llm_calls: int


def collect_answers(engine: QueryEngine, questions: Sequence[Question], mode: str) -> list[Answer]:
    """Each question answered by one search mode of the engine."""
    check_mode(mode)
    out = []
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        result = getattr(engine, f"{mode}_search")(q.text)
        out.append(Answer(mode, q.text, result.answer, round(time.perf_counter() - t0, 2), result.llm_calls))
        log.info("%s answer %d/%d in %.1fs", mode, i + 1, len(questions), out[-1].seconds)
    return out


_JUDGE_SYSTEM = (
    "You are an impartial judge. You compare two answers to the same question on one criterion only. The order of the "
    "answers says nothing about their quality, and a longer answer is not better unless the criterion says so."
)
_JUDGE_SCHEMA = object_schema(reason=text_field(), winner={"enum": ["1", "2", "tie"]})


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
        for first, second, shown in ((ta, tb, "ab"), (tb, ta, "ba")):  # shown: the modes of answers 1 and 2
            mode_of = {"1": shown[0], "2": shown[1], "tie": "tie"}
            prompts = [_judge_prompt(q.text, first, second, name, definition) for name, definition in criteria.items()]
            got = [ask(llm, _JUDGE_SYSTEM, prompt, _JUDGE_SCHEMA, max_tokens) or {} for prompt in prompts]
            by_order.append([(mode_of.get(str(g.get("winner"))), str(g.get("reason", ""))) for g in got])
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
    config = LLMConfig(model=model, chat_format=chat_format, n_ctx=n_ctx or LLMConfig().n_ctx)
    return open_llm(config, models_dir=engine.models_dir, cache=cache)


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
        check_mode(mode)
    if "global" in (a, b):  # an index global search cannot read fails now, not after the questions are written
        engine.index.map_source(engine.config.global_.source)
    t0 = time.perf_counter()
    if isinstance(questions, int):
        if source == "personas":
            qs = generate_questions(judge_llm, description or describe_corpus(engine), questions)
            if len(qs) < questions and engine.index.globals.reports:  # a small model repeats itself: top up
                extra = questions_from_reports(judge_llm, engine.index.globals.reports, questions)
                qs = first_distinct(qs + extra, questions, "personas, then reports")
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
    rates = win_rates(verdicts, resamples=resamples, seed=seed)
    settings = {
        "source": source if isinstance(questions, int) else "given",
        "answer_tokens": answer_tokens,
        "resamples": resamples,
        "seed": seed,
        "criteria": criteria or CRITERIA,
    }
    took = {"questions": t1 - t0, "answers": t2 - t1, "judge": t3 - t2, "total": t3 - t0}
    seconds = {k: round(v, 1) for k, v in took.items()}
    return Evaluation(a, b, judge_llm.name, qs, answers_a, answers_b, verdicts, rates, settings, seconds)
