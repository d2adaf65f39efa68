"""The LLM contract, the call cache around any backend, and the llama.cpp backend.

A backend only runs the model; `CachedLLM` puts every call through a `CallCache` keyed by (model fingerprint, request),
so a rerun of an identical build replays the stored outputs and makes no model call, and counts calls and cache hits.
`open_llm` is how build and search get one. `llama_cpp` is imported only when a `LlamaCppLLM` is constructed: importing
this module loads nothing heavy."""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast, runtime_checkable

from tiny_graphrag.backends.files import file_fingerprint, resolve_model
from tiny_graphrag.backends.gguf import ChatTemplate, load_llama, schema_grammar, text_grammar
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.errors import TinyGraphRAGError
from tiny_graphrag.index.cache import CallCache, cache_key

if TYPE_CHECKING:  # pragma: no cover
    from llama_cpp import Llama
    from llama_cpp.llama_types import CreateCompletionResponse
    from typing_extensions import Unpack  # typing's from Python 3.11

Messages = list[dict[str, str]]  # [{"role": "system" | "user" | "assistant", "content": text}, ...]
JSON = dict[str, Any]  # a JSON object: here a JSON schema


# Room for the chat template's own tokens (role markers, BOS, a date header in Llama 3), which
# prompt budgets do not see because they count message contents only.
CHAT_TEMPLATE_MARGIN = 64


class ContextWindowError(TinyGraphRAGError, ValueError):
    """A prompt plus the tokens asked for do not fit in the model's context window."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" or "length" (the output hit max_tokens)
    cached: bool = False  # True when replayed from the CallCache (no model call was made)


class CompleteOptions(TypedDict, total=False):
    """The keyword arguments of `LLM.complete`, all optional (`stream` takes the last three)."""

    schema: JSON | None  # the output is JSON of this JSON schema
    # The output follows this GBNF grammar (a backend that cannot constrain its output may ignore
    # it: what needs the constraint checks the output again).
    grammar: str | None
    max_tokens: int  # default 512
    temperature: float  # default 0.0
    seed: int  # this call's sampling seed (default: the backend's); matters only at a temperature above 0


@runtime_checkable
class LLM(Protocol):
    """What a language-model backend must do; `CachedLLM` adds the call cache to any of them."""

    name: str
    fingerprint: str  # identifies the weights (and chat format): part of every cache key
    n_ctx: int
    seed: int  # sampling seed: part of every cache key

    def count_tokens(self, text: str) -> int: ...

    def complete(self, messages: Messages, **options: Unpack[CompleteOptions]) -> Completion: ...

    def stream(
        self, messages: Messages, *, grammar: str | None = None, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        """The output piece by piece; a generator may `return` the run's Completion (its token counts)."""
        ...


def context_window_error(prompt_tokens: int, max_tokens: int, n_ctx: int) -> ContextWindowError:
    return ContextWindowError(
        f"the prompt is {prompt_tokens} tokens, but with n_ctx={n_ctx} and max_tokens={max_tokens} only "
        f"{max(n_ctx - max_tokens, 0)} prompt tokens fit. To fix: raise LLMConfig.n_ctx (the model's context window), "
        "lower the output max_tokens (e.g. LLMConfig.max_report_tokens), or give the prompt less context."
    )


class CachedLLM:
    """Any LLM backend behind the call cache, with call counting; implements `LLM` itself.

    Without a persistent cache an in-memory one still de-duplicates calls within a process. Attributes the backend has
    beyond the protocol (a LlamaCppLLM's `llama`, `prompt_token_ids`) are reachable through the wrapper."""

    def __init__(self, backend: LLM, cache: CallCache | None = None) -> None:
        self.backend = backend
        self.cache = cache if cache is not None else CallCache(None)
        self.calls = 0  # real model calls made through this wrapper
        self.cache_hits = 0  # calls answered from the cache
        # A backend written before `grammar` was part of the contract gets calls without it.
        self._grammar_in = {m: _accepts(getattr(backend, m), "grammar") for m in ("complete", "stream")}
        self._seed_in = _accepts(backend.complete, "seed")  # likewise a per-call seed

    name = property(lambda self: self.backend.name)
    fingerprint = property(lambda self: self.backend.fingerprint)
    n_ctx = property(lambda self: self.backend.n_ctx)
    seed = property(lambda self: self.backend.seed)

    def __getattr__(self, name: str) -> Any:
        if name == "backend":  # not set yet (during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.backend, name)

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(text)

    def _constraint(self, method: str, grammar: str | None) -> dict[str, str]:
        return {"grammar": grammar} if grammar is not None and self._grammar_in[method] else {}

    def key(
        self,
        messages: Messages,
        schema: JSON | None,
        max_tokens: int,
        temperature: float,
        grammar: str | None = None,
        seed: int | None = None,
    ) -> str:
        """The cache key of one request (unchanged since the first release: old caches stay valid).

        The key's JSON sorts keys, but a schema's property order decides the order the model
        writes them in; until the grammar followed that order it got the properties sorted, so a
        schema whose order is not sorted has its order in the key (those old outputs are not
        reused) and any other keeps its old key. A GBNF grammar is in the key only when given, a call's own seed in
        place of the backend's."""
        request: dict[str, object] = {
            "messages": messages,
            "schema": schema,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": self.seed if seed is None else seed,
        }
        if schema is not None:
            order = property_order(schema)
            if order != property_order(json.loads(json.dumps(schema, sort_keys=True))):
                request["property_order"] = order
        if grammar is not None:
            request["grammar"] = grammar
        return cache_key("chat", self.fingerprint, request)

    def complete(self, messages: Messages, **options: Unpack[CompleteOptions]) -> Completion:
        schema, grammar, seed = options.get("schema"), options.get("grammar"), options.get("seed")
        max_tokens, temperature = options.get("max_tokens", 512), options.get("temperature", 0.0)
        _check_max_tokens(max_tokens)
        key = self.key(messages, schema, max_tokens, temperature, grammar, seed)
        if (hit := self._lookup(key)) is not None:
            return Completion(**{**hit, "cached": True})
        asked = CompleteOptions(schema=schema, max_tokens=max_tokens, temperature=temperature)
        if seed is not None and self._seed_in:
            asked["seed"] = seed
        result = self.backend.complete(messages, **asked, **self._constraint("complete", grammar))
        self.calls += 1
        self._store(key, result)
        return result

    def stream(
        self, messages: Messages, *, grammar: str | None = None, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        """Yield the output text piece by piece; a cached answer comes back as one piece."""
        _check_max_tokens(max_tokens)
        # Same key as `complete` without a schema: greedy decoding gives the same text either way.
        key = self.key(messages, None, max_tokens, temperature, grammar)
        if (hit := self._lookup(key)) is not None:
            yield hit["text"]
            return
        pieces: list[str] = []
        run = self.backend.stream(
            messages, max_tokens=max_tokens, temperature=temperature, **self._constraint("stream", grammar)
        )
        record: Completion | None = None
        started = False  # the model ran: a context-window error before the first piece is no call
        try:
            while True:
                try:
                    piece = next(run)
                except StopIteration as stop:  # a backend's generator may return the run's Completion
                    started, record = True, stop.value
                    break
                started = True
                pieces.append(piece)
                yield piece
        finally:
            if started:
                self.calls += 1
            getattr(run, "close", lambda: None)()  # a stream abandoned early releases the backend's lock now
        # Stored only when the consumer read the stream to its end.
        text = "".join(pieces)
        if record is None:  # a backend whose generator returns nothing
            record = Completion(text, 0, self.count_tokens(text), "stop")
        self._store(key, replace(record, text=text))

    def _lookup(self, key: str) -> dict[str, Any] | None:
        if (hit := self.cache.get(key)) is not None:
            self.cache_hits += 1
        return hit

    def _store(self, key: str, result: Completion) -> None:
        stored = asdict(result)
        del stored["cached"]  # a replayed answer says so itself
        self.cache.put(key, stored)


def property_order(schema: object) -> list[object]:
    """The object properties of a JSON schema in declared order, nested ones included."""
    if isinstance(schema, dict):
        names = list(schema["properties"]) if isinstance(schema.get("properties"), dict) else []
        return names + [property_order(v) for v in schema.values() if isinstance(v, (dict, list))]
    return [property_order(v) for v in schema] if isinstance(schema, list) else []


def _accepts(function: Callable[..., Any], name: str) -> bool:
    """Whether `function` takes a keyword argument `name` (by name or through **kwargs)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: assume the current contract
        return True
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _check_max_tokens(max_tokens: int) -> None:
    # llama.cpp reads max_tokens <= 0 as "until the window is full": refuse it instead.
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")


class LlamaCppLLM:
    """A local GGUF model run by llama-cpp-python: an `LLM` backend without a cache (see `open_llm`).

    Calls on one loaded model are serialised by a lock; a `stream` holds it until the stream is read to its end or
    closed, so finish (or close) a stream before the next call on that model."""

    def __init__(self, config: LLMConfig | None = None, *, models_dir: str | os.PathLike[str] | None = None) -> None:
        self.config = config = config or LLMConfig()
        self.path = resolve_model(config.model, kind="gguf", models_dir_=models_dir)
        self._llama, self._lock = load_llama(self.path, config)
        self.name = self.path.name
        self.n_ctx = int(self._llama.n_ctx())
        self.seed = config.seed
        self.template = ChatTemplate(self._llama, config.chat_format, self.path, self.seed)
        self.chat_format = self.template.name
        # The chat format changes every prompt, so it is part of what the outputs depend on.
        self.fingerprint = f"{file_fingerprint(self.path)}:{self.chat_format}"

    @property
    def llama(self) -> Llama:
        """The loaded `llama_cpp.Llama`, for low-level use (benchmarks); calls on it skip the cache and lock."""
        return self._llama

    @property
    def n_params(self) -> int:
        """The model's parameter count (the search's reader choice reads it)."""
        return int(self._llama._model.n_params())

    def prompt_token_ids(self, messages: Messages, schema: JSON | None = None) -> list[int]:
        """The prompt exactly as the model would run it: chat template, merged system text, BOS."""
        with self._lock:
            prompt = self.template.arguments(messages, schema, 1, 0.0)["prompt"]
        if isinstance(prompt, str):
            prompt = self._llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        return list(prompt)

    # -- LLM protocol -----------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0

    def _run_kwargs(self, messages: Messages, options: CompleteOptions) -> dict[str, Any]:
        schema, grammar, max_tokens = options.get("schema"), options.get("grammar"), options.get("max_tokens", 512)
        _check_max_tokens(max_tokens)
        if schema is not None and grammar is not None:
            raise ValueError("give a JSON schema or a GBNF grammar, not both")
        kwargs = self.template.arguments(messages, schema, max_tokens, options.get("temperature", 0.0))
        n_prompt = len(kwargs["prompt"])
        # llama-cpp-python would silently shrink max_tokens to what is left; we refuse instead.
        if n_prompt + max_tokens > self.n_ctx:
            raise context_window_error(n_prompt, max_tokens, self.n_ctx)
        kwargs["max_tokens"] = max_tokens
        if options.get("seed") is not None:
            kwargs["seed"] = options["seed"]
        if schema is not None:
            # In the schema's declared order: llama.cpp writes properties in the order it is given
            # them (sorted keys here had overridden every schema's order).
            kwargs["grammar"] = schema_grammar(json.dumps(schema))
        elif grammar is not None:
            kwargs["grammar"] = text_grammar(grammar)
        return kwargs

    def complete(self, messages: Messages, **options: Unpack[CompleteOptions]) -> Completion:
        with self._lock:
            kwargs = self._run_kwargs(messages, options)
            # llama-cpp-python types its return as a stream or a response whatever `stream` is
            out = cast("CreateCompletionResponse", self._llama.create_completion(**kwargs))
        choice = out["choices"][0]
        usage: Mapping[str, Any] = out.get("usage") or {}
        return Completion(
            text=choice["text"],
            prompt_tokens=int(usage.get("prompt_tokens", len(kwargs["prompt"]))),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
        )

    def stream(
        self, messages: Messages, *, grammar: str | None = None, max_tokens: int = 512, temperature: float = 0.0
    ) -> Generator[str, None, Completion]:
        with self._lock:
            options = CompleteOptions(grammar=grammar, max_tokens=max_tokens, temperature=temperature)
            kwargs = {**self._run_kwargs(messages, options), "stream": True}
            pieces: list[str] = []
            finish: str = "stop"
            for chunk in cast("Iterator[CreateCompletionResponse]", self._llama.create_completion(**kwargs)):
                choice = chunk["choices"][0]
                finish = choice.get("finish_reason") or finish
                if choice.get("text"):
                    pieces.append(choice["text"])
                    yield choice["text"]
        return Completion("".join(pieces), len(kwargs["prompt"]), len(pieces), finish)


def open_llm(
    config: LLMConfig | None = None, *, models_dir: str | os.PathLike[str] | None = None, cache: CallCache | None = None
) -> CachedLLM:
    """The configured GGUF model behind the call cache: how build and search get their LLM."""
    return CachedLLM(LlamaCppLLM(config, models_dir=models_dir), cache)
