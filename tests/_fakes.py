"""Deterministic fakes for unit tests of our own pipeline logic (never the only test of a model)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tiny_graphrag.backends.llm import CachedLLM, Completion, context_window_error
from tiny_graphrag.index.cache import CallCache
from tiny_graphrag.records import Chunk, EntityMention, Extraction, RelationMention

# A name: capitalized words ("Barack Obama", "Harvard Law School").
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_TYPES = {
    "Obama": "Person",
    "Michelle": "Person",
    "Harvard": "Organization",
    "Chicago": "Location",
    "Hawaii": "Location",
    "Columbia": "Organization",
    "Honolulu": "Location",
}


class KeywordExtractor:
    """Finds capitalized names; types them by a keyword; relates consecutive names in a chunk."""

    name = "keyword-fake"

    def __init__(self, relation: str = "related to", fail_after: int | None = None):
        self.relation = relation
        self.calls = 0
        self.chunks_seen = 0
        self.fail_after = fail_after  # raise KeyboardInterrupt after this many chunks (crash test)

    def describe(self) -> dict:
        return {"name": self.name, "relation": self.relation}

    def extract(self, chunks: Sequence[Chunk], *, progress: bool = False) -> list[Extraction]:
        self.calls += 1
        out = []
        for chunk in chunks:
            if self.fail_after is not None and self.chunks_seen >= self.fail_after:
                raise KeyboardInterrupt
            self.chunks_seen += 1
            ents = []
            for m in _NAME.finditer(chunk.text):
                typ = next((t for k, t in _TYPES.items() if k in m.group()), None)
                if typ:
                    ents.append(EntityMention(m.group(), typ, m.start(), m.end(), 0.9))
            rels = tuple(RelationMention(a, b, self.relation, 0.8) for a, b in zip(ents, ents[1:]))
            out.append(Extraction(chunk.id, tuple(ents), rels))
        return out


# ---- LLM -------------------------------------------------------------------------------------

Responder = Callable[[list[dict], "dict | None", int], "str | dict | list"]


def example_from_schema(schema: dict) -> Any:
    """A small instance of a JSON schema (objects, arrays, strings, numbers, booleans, enums)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        return {k: example_from_schema(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [example_from_schema(schema.get("items", {})) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "text"


class FakeBackend:
    """A deterministic LLM backend for unit tests of our own logic (not of the model integration).

    Tokens are whitespace-separated words. `respond(messages, schema, max_tokens)` returns the
    output (a dict/list is dumped as JSON); by default a minimal instance of the schema, else an
    echo of the last message. Output longer than max_tokens words is cut to max_tokens words
    with finish_reason "length", like a real model running out of tokens.
    """

    def __init__(
        self,
        respond: Responder | None = None,
        *,
        n_ctx: int = 4096,
        name: str = "fake",
        seed: int = 0,
        run: Callable[..., Completion] | None = None,
        n_params: int | None = None,
    ) -> None:
        self.respond = respond
        if n_params is not None:  # the size a real backend reports (SearchConfig.reader "auto" reads it)
            self.n_params = n_params
        self.name = name
        self.n_ctx = n_ctx
        self.seed = seed
        self.fingerprint = f"fake:{name}"
        self.requests: list[dict[str, Any]] = []  # every real call, for assertions
        self.grammars: list[str | None] = []  # the GBNF grammar of every call (None: unconstrained)
        self._run = run or self.answer  # FakeLLM routes calls through its overridable `_complete`

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_tokens(self, messages: list[dict]) -> int:
        return sum(self.count_tokens(m.get("content") or "") for m in messages)

    def complete(
        self,
        messages: list[dict],
        *,
        schema: dict | None = None,
        grammar: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Completion:
        self.grammars.append(grammar)  # the constraint is not applied: the answers are scripted
        return self._run(messages, schema, max_tokens, temperature)

    def stream(
        self, messages: list[dict], *, grammar: str | None = None, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        result = self.complete(messages, grammar=grammar, max_tokens=max_tokens, temperature=temperature)
        yield from re.findall(r"\S+\s*", result.text)
        return result

    def answer(self, messages: list[dict], schema: dict | None, max_tokens: int, temperature: float) -> Completion:
        n_prompt = self.prompt_tokens(messages)
        if n_prompt + max_tokens > self.n_ctx:
            raise context_window_error(n_prompt, max_tokens, self.n_ctx)
        self.requests.append({"messages": messages, "schema": schema, "max_tokens": max_tokens})
        if self.respond is not None:
            out = self.respond(messages, schema, max_tokens)
        elif schema is not None:
            out = example_from_schema(schema)
        else:
            out = "echo: " + (messages[-1].get("content") or "" if messages else "")
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        words = re.findall(r"\S+\s*", text)
        finish = "stop"
        if len(words) > max_tokens:
            text, finish = "".join(words[:max_tokens]).rstrip(), "length"
        return Completion(text, n_prompt, min(len(words), max_tokens), finish, cached=False)


class FakeLLM(CachedLLM):
    """A FakeBackend behind the call cache, as the pipeline gets a model from `open_llm`."""

    def __init__(
        self,
        respond: Responder | None = None,
        *,
        n_ctx: int = 4096,
        name: str = "fake",
        cache: CallCache | None = None,
        seed: int = 0,
        n_params: int | None = None,
    ) -> None:
        backend = FakeBackend(respond, n_ctx=n_ctx, name=name, seed=seed, run=self._complete, n_params=n_params)
        super().__init__(backend, cache)

    def _complete(self, messages: list[dict], schema: dict | None, max_tokens: int, temperature: float) -> Completion:
        """One model call; a test overrides it to make calls slow (tests/test_resume.py)."""
        return self.backend.answer(messages, schema, max_tokens, temperature)


# A model of this size reads GraphRAG's whole context (SearchConfig.reader "auto" -> "large"): the
# tests of that path's tables, grammar and reduce say so with `FakeLLM(..., n_params=LARGE)`.
LARGE = 8_000_000_000


class SlowLLM(FakeLLM):
    """A FakeLLM whose every model call takes `delay` seconds (so a test can kill a build mid-stage)."""

    def __init__(self, delay: float, respond: Responder | None = None, **kw: Any) -> None:
        super().__init__(respond, **kw)
        self.delay = delay

    def _complete(self, *a: Any, **k: Any) -> Completion:
        time.sleep(self.delay)
        return super()._complete(*a, **k)
