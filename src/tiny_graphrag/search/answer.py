"""One search in progress, shared by the search modes: step timing, token room, usage, the answer call.

A mode's module owns its flow (retrieve -> context -> model calls); a `SearchRun` holds what every flow needs along the
way and turns the last prompt into a result: answer (complete or stream) -> citations checked against the sources shown
-> SearchResult."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from tiny_graphrag.backends.llm import CHAT_TEMPLATE_MARGIN, LLM, CachedLLM
from tiny_graphrag.citations import check_citations
from tiny_graphrag.errors import InputError, listing
from tiny_graphrag.search.config import EvidenceConfig
from tiny_graphrag.search.context import BuiltContext, source_chunk
from tiny_graphrag.search.evidence import Evidence, Sentence
from tiny_graphrag.search.prompts import (
    NO_DATA_ANSWER,
    READER_FORMS,
    READER_GRAMMARS,
    READER_MAX_TOKENS,
    answer_grammar,
    answer_messages,
    prompt_tokens,
    reader_messages,
)
from tiny_graphrag.search.reader import (
    clean_answer,
    echoes_prompt,
    echoes_question,
    items_of,
    labels_like_prompt,
    question_form,
    supporting,
    tokens,
)
from tiny_graphrag.search.result import SearchResult, Sources, StreamingResult, Usage
from tiny_graphrag.search.tokens import counter_for

log = logging.getLogger(__name__)

MIN_CONTEXT_TOKENS = 64  # less room than this for data means the query itself is too long

APPROXIMATE_NOTE = (
    "token counts are approximate: no LLM is loaded, so budgets were counted with a conservative "
    "estimate instead of the model's tokenizer"
)


NO_SENTENCE_ANSWER = "The context does not say: no sentence of the passages found bears on this question"
# A small reader missing a second hop names the question's own subject: refused, unless samples name something else.
ECHO_ANSWER = "The context does not say: the passages found name only what the question names"
ECHO_NOTE = "the reader answered {answer!r}, which only repeats what the {what} names: refused"
# An echo is followed by answers sampled at this temperature (round 4's vote, bench/RESULTS.md)
SAMPLE_TEMPERATURE = 0.7
SAMPLED_NOTE = (
    "the reader's {echo!r} only repeats the question; {votes} of {n} answers sampled then said {answer!r}, kept"
)
NO_ANSWER = "The context does not say: the reader found no answer in the passages"


class Timer:
    """Seconds per named step: `with timer("retrieve"): ...`; `total` runs from construction."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(step, time.perf_counter() - t)

    def add(self, step: str, seconds: float) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + seconds

    def report(self, *, total: bool = True) -> dict[str, float]:
        out = dict(self.seconds, total=time.perf_counter() - self._start) if total else dict(self.seconds)
        return {k: round(v, 4) for k, v in out.items()}


class CallMeter:
    """One category's usage of an LLM: its call counters are read before and after."""

    def __init__(self, llm: CachedLLM) -> None:
        self.llm = llm
        self._calls, self._hits = llm.calls, llm.cache_hits

    def usage(self, prompt_tokens: int, completion_tokens: int) -> Usage:
        return Usage(self.llm.calls - self._calls, prompt_tokens, completion_tokens, self.llm.cache_hits - self._hits)


class SearchRun:
    """What a search has gathered so far: notes, details, usage per category, seconds per step.

    `tokenizer` counts the budgets (None: the stated estimate); `llm` loads the model on first use (never for
    `only_context`); `documents` names each chunk's document file in the sources of the result."""

    def __init__(
        self,
        mode: str,
        query: str,
        tokenizer: LLM | None,
        *,
        n_ctx: int,
        context_tokens: int | None,
        answer_tokens: int,
        only_context: bool,
        llm: Callable[[], CachedLLM],
        documents: Callable[[Sources], Sources],
        where: Mapping[str, str] | None = None,
        reader: str = "large",
        evidence: EvidenceConfig | None = None,
    ) -> None:
        self.mode, self.query, self.counter = mode, query, counter_for(tokenizer)
        self.where = dict(where or {})  # metadata key=value: only text of documents that have them
        self.n_ctx, self.context_tokens, self.answer_tokens = n_ctx, context_tokens, answer_tokens
        self.only_context = only_context
        self.reader, self.evidence = reader, evidence or EvidenceConfig()  # the small reader's settings
        self._llm, self._documents = llm, documents
        self.timer = Timer()
        self.notes: list[str] = []
        self.details: dict[str, Any] = {"only_context": only_context}
        self.usage: dict[str, Usage] = {}

    @property
    def llm(self) -> CachedLLM:
        return self._llm()

    def room(self, messages: list[dict], max_tokens: int, what: str, *, wanted: int | None = None) -> int:
        """Tokens for data in a prompt: the configured budget (`context_tokens`, and `wanted`, a mode's own), cut to
        what the window leaves with a note saying so; an InputError when the query alone is too long."""
        fixed = prompt_tokens(messages, self.counter)
        room = self.n_ctx - max_tokens - fixed - CHAT_TEMPLATE_MARGIN
        if room < MIN_CONTEXT_TOKENS:
            # the query's tokens, as often as the prompt quotes it (the map prompt does twice)
            quoted = sum(str(m["content"]).count(self.query) for m in messages) if self.query else 0
            query = self.counter(self.query) * max(1, quoted)
            # name the cause: a long query, or a window too small for even a short one
            long_query = room + query >= MIN_CONTEXT_TOKENS + 16  # a short (16-token) query would fit
            cause = "the query is too long" if long_query else f"n_ctx={self.n_ctx} is too small for any query"
            raise InputError(
                f"{cause}: the {what} prompt without any data is already {fixed} tokens ({query} of them the query; "
                f"{self.counter.name}), and with n_ctx={self.n_ctx} and {max_tokens} answer tokens only {max(room, 0)} "
                f"tokens would be left for data, under the minimum of {MIN_CONTEXT_TOKENS}. To fix: raise --n-ctx "
                f"(LLMConfig.n_ctx in Python){', or shorten the query' if long_query else ''}"
            )
        budgets = [int(b) for b in (self.context_tokens, wanted) if b]
        budget = min(budgets) if budgets else room
        if budget > room:
            note = (
                f"the data in the {what} prompt was cut to {room} tokens, below the {budget} configured: n_ctx={self.n_ctx} less "
                f"the {fixed}-token prompt and {max_tokens} output tokens leaves no more. To fix: raise --n-ctx "
                f"(LLMConfig.n_ctx) or configure a smaller budget"
            )
            if note not in self.notes:
                self.notes.append(note)
        return min(budget, room)

    def answer_room(self, citations: str) -> int:
        """`room` in the answer prompt of a one-call search (naive, local, tree): the opening every
        one of them shares, recorded in the details as its budget. For a small reader, the room of
        its evidence: `evidence.tokens` at most."""
        if self.reader == "small":
            form = question_form(self.query)
            messages = reader_messages("", self.query, form)
            room = self.room(messages, READER_MAX_TOKENS[form], "answer", wanted=self.evidence.tokens)
        else:
            room = self.room(answer_messages("", self.query, citations), self.answer_tokens, "answer")
        self.details["budget"] = room
        return room

    def answer_context(
        self, built: BuiltContext, citations: str, *, stream: bool, cite: Sequence[str]
    ) -> SearchResult | StreamingResult:
        """The end of a one-call search: the context alone for `only_context`, else the answer
        prompt over it (no call when it shows nothing)."""
        if self.only_context:
            return self.result(built)
        messages = answer_messages(built.text, self.query, citations) if not built.empty else None
        return self.answer(built, messages, max_tokens=self.answer_tokens, stream=stream, cite=cite)

    def result(
        self,
        built: BuiltContext,
        *,
        context: str | None = None,
        answer: str = "",
        invalid: dict[str, tuple[int, ...]] | None = None,
        total: bool = True,
    ) -> SearchResult:
        """The result as gathered so far; `context` when the model saw more than `built` (global)."""
        return SearchResult(
            mode=self.mode,
            query=self.query,
            answer=answer,
            context=built.text if context is None else context,
            sources=self._documents(built.sources),
            context_tokens=built.tokens,
            token_counter=self.counter.name,
            seconds=self.timer.report(total=total),
            notes=tuple(self.notes) + (() if self.counter.exact else (APPROXIMATE_NOTE,)),
            details=dict(self.details),
            invalid_citations=invalid or {},
            usage=dict(self.usage),
        )

    def answer(
        self,
        built: BuiltContext,
        messages: list[dict] | None,
        *,
        max_tokens: int,
        category: str = "answer",
        stream: bool = False,
        context: str | None = None,
        cite: Sequence[str] = (),
        declined: str = NO_DATA_ANSWER,
    ) -> SearchResult | StreamingResult:
        """The final call (counted under `category`), or, when `messages` is None (nothing
        relevant was found), the answer that says so (`declined`) without asking the model.

        `cite`: the citation kinds the prompt asks for ("Sources", "Reports"); the answer is then
        constrained to words first and a citation of shown ids only (prompts.answer_grammar)."""
        if messages is None:
            self.notes.append("nothing relevant to the query was found, so no answer call was made")
            return self.given(built, declined, stream=stream, context=context)

        shown = built.sources.citable()
        grammar = answer_grammar({kind: sorted(shown[kind.lower()]) for kind in cite}) if cite else None

        def finish(text: str) -> tuple[str, dict[str, tuple[int, ...]]]:
            answer, invalid = check_citations(text.strip(), built.sources)
            if invalid:
                log.info("removed citations of ids not in the context: %s", invalid)
            return answer, invalid

        return self.call(
            built, messages, grammar, max_tokens, finish, category=category, stream=stream, context=context
        )

    def given(
        self, built: BuiltContext, answer: str, *, stream: bool, context: str | None = None
    ) -> SearchResult | StreamingResult:
        """A result whose answer needed no model call (streamed: in one piece)."""
        res = self.result(built, context=context, answer=answer)
        return StreamingResult(res, iter([res.answer]), lambda text, secs: res) if stream else res

    def call(
        self,
        built: BuiltContext,
        messages: list[dict],
        grammar: str | None,
        max_tokens: int,
        finish: Callable[[str], tuple[str, dict[str, tuple[int, ...]]]],
        *,
        category: str = "answer",
        stream: bool = False,
        context: str | None = None,
    ) -> SearchResult | StreamingResult:
        """The model call (counted under `category`) whose text `finish` turns into the answer and
        the citations it removed; streamed pieces are the raw text."""
        llm = self.llm
        meter = CallMeter(llm)
        n_prompt = prompt_tokens(messages, self.counter)

        def done(text: str, n_completion: int, n_prompt_used: int) -> SearchResult:
            self.usage[category] = meter.usage(n_prompt_used, n_completion)  # before `finish`, which may sample more
            answer, invalid = finish(text)
            return self.result(built, context=context, answer=answer, invalid=invalid)

        if not stream:
            with self.timer("answer"):
                out = llm.complete(messages, grammar=grammar, max_tokens=max_tokens, temperature=0.0)
            return done(out.text, out.completion_tokens, out.prompt_tokens or n_prompt)

        def streamed(text: str, seconds: float) -> SearchResult:
            self.timer.add("answer", seconds)
            return done(text, self.counter(text), n_prompt)

        pending = self.result(built, context=context, total=False)
        return StreamingResult(
            pending, llm.stream(messages, grammar=grammar, max_tokens=max_tokens, temperature=0.0), streamed
        )

    def sampled(self, messages: list[dict], echo: str, shown: Sequence[Sentence]) -> str:
        """After an `echo`, the most common of `evidence.echo_samples` answers sampled from the same prompt that names
        something the question does not and that the `shown` sentences hold (the first sampled among equals), else the
        echo (refused). Seeded per sample, so the same question gets the same answer, and the call cache replays it."""
        meter, kept, prompt, completion = CallMeter(self.llm), [], 0, 0
        grammar, max_tokens = READER_GRAMMARS["factoid"], READER_MAX_TOKENS["factoid"]
        for seed in range(1, self.evidence.echo_samples + 1):
            out = self.llm.complete(
                messages, grammar=grammar, max_tokens=max_tokens, temperature=SAMPLE_TEMPERATURE, seed=seed
            )
            prompt, completion = prompt + out.prompt_tokens, completion + out.completion_tokens
            answer = clean_answer(out.text)
            if (
                answer
                and not echoes_question(answer, self.query)
                and not labels_like_prompt(answer, READER_FORMS["factoid"])  # "a name", "Name: X, Place: Y"
                and supporting(answer, shown, self.query)  # in the sentences shown, so it gets cited
            ):
                kept.append(answer)
        self.usage["answer_samples"] = meter.usage(prompt, completion)
        if not kept:
            return echo
        votes = Counter(" ".join(tokens(a)) for a in kept)  # "Milton Keynes." and "milton keynes" agree
        most = max(votes.values())
        chosen = next(a for a in kept if votes[" ".join(tokens(a))] == most)  # the first sampled among equals
        self.notes.append(SAMPLED_NOTE.format(echo=echo, answer=chosen, votes=most, n=self.evidence.echo_samples))
        return chosen

    def answer_evidence(
        self, evidence: Evidence, sid_of: Mapping[str, int], *, stream: bool, closest: Sequence[str] = ()
    ) -> SearchResult | StreamingResult:
        """The end of a one-call search for a small reader (reader.py): the evidence alone for `only_context`; else one
        answer-only call over it, each answer (or list item) citing the passages whose kept sentences hold it. When no
        sentence was kept, the no-data answer names the `closest` passages' titles, without a call."""
        shown = tuple(source_chunk(c, sid_of[c.id]) for c in evidence.chunks)
        built = BuiltContext(evidence.text, Sources(chunks=shown), evidence.tokens, self.details.get("budget", 0))
        self.details["evidence"] = [
            {"source": sid_of[s.passage.chunk.id], "score": round(s.score, 4), "text": s.text} for s in evidence.kept
        ]
        if self.only_context:
            return self.result(built)
        if not evidence.kept:
            near = f" (the closest passages: {listing(closest, 3)})" if closest else ""
            return self.answer(built, None, max_tokens=0, stream=stream, declined=NO_SENTENCE_ANSWER + near)
        self.details["form"] = form = question_form(self.query)
        kept = evidence.kept
        messages = reader_messages(evidence.text, self.query, form)

        def finish(text: str) -> tuple[str, dict[str, tuple[int, ...]]]:
            answer = clean_answer(text)
            if echoes_question(answer, self.query) and form == "factoid" and self.evidence.echo_samples:
                answer = self.sampled(messages, answer, kept)
            if echoes_question(answer, self.query):
                self.notes.append(ECHO_NOTE.format(answer=answer, what="question"))
                return ECHO_ANSWER, {}
            asked = READER_FORMS[form]  # "a name", or "a date,2000" for a number: the form asked for, not an answer
            if echoes_prompt(answer, asked) or (form == "number" and labels_like_prompt(answer, asked)):
                self.notes.append(ECHO_NOTE.format(answer=answer, what="prompt"))
                return NO_ANSWER, {}
            cited = []
            for item in items_of(answer, form):
                ids = [sid_of[kept[i].passage.chunk.id] for i in supporting(item, kept, self.query)]  # one per passage
                cited.append(f"{item} [Data: Sources ({', '.join(map(str, ids))})]" if ids else item)
            return ("; ".join(cited) if form == "list" else cited[0]) if answer else answer, {}

        return self.call(built, messages, READER_GRAMMARS[form], READER_MAX_TOKENS[form], finish, stream=stream)
