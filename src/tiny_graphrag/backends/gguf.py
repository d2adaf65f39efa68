"""GGUF model files for llama.cpp: header checks, loading once per process, chat templates, output grammars.

`llama_cpp` is imported only when a model is loaded or a grammar built."""

from __future__ import annotations

import functools
import logging
import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.files import verify_pinned
from tiny_graphrag.backends.loaded import cached_model
from tiny_graphrag.config import LLMConfig
from tiny_graphrag.errors import ModelLoadError, require

if TYPE_CHECKING:  # pragma: no cover
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

log = logging.getLogger(__name__)


def gguf_value(path: Path, key: str) -> str | int | None:
    """A string or integer value of the GGUF header (for error messages), or None. The key/value
    header precedes the tokenizer's long arrays, so its first MiB holds it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return None
    at = head.find(key.encode())
    if at < 0:
        return None
    at += len(key)
    try:
        (vtype,) = struct.unpack_from("<I", head, at)
        if vtype == 8:  # a GGUF string: its length, then its bytes
            (length,) = struct.unpack_from("<Q", head, at + 4)
            return head[at + 12 : at + 12 + length].decode("utf-8", "replace") if length <= 256 else None
        fmt = {4: "<I", 5: "<i", 10: "<Q", 11: "<q"}.get(vtype)  # GGUF integer value types
        return int(struct.unpack_from(fmt, head, at + 4)[0]) if fmt else None
    except struct.error:
        return None


def gguf_architecture(path: Path) -> str | None:
    """`general.architecture` read from the GGUF header, or None."""
    arch = gguf_value(path, "general.architecture")
    return arch if isinstance(arch, str) else None


def gguf_context_length(path: Path) -> int | None:
    """`<architecture>.context_length` (the context the model was trained for) from the GGUF header, or None."""
    arch = gguf_architecture(path)
    trained = gguf_value(path, f"{arch}.context_length") if arch else None
    return trained if isinstance(trained, int) else None


def load_failure(path: Path, exc: Exception, n_ctx: int, version: str) -> ModelLoadError:
    """Why llama.cpp failed: the context window asked for (a file that loads but whose context cannot be
    created is not corrupt), else the file or its architecture."""
    trained = gguf_context_length(path)
    if "llama_context" in str(exc) or (trained and n_ctx > trained):
        trained_note = f"; the model was trained for {trained}" if trained else ""
        return ModelLoadError(
            f"llama.cpp could not create a context of n_ctx={n_ctx:,} tokens for {path} ({exc}{trained_note}): its "
            f"memory does not fit. To fix: lower --n-ctx (LLMConfig.n_ctx), e.g. to {min(trained or 4096, 4096)}."
        )
    arch = gguf_architecture(path) or "unknown"
    return ModelLoadError(
        f"llama.cpp could not load {path} (architecture '{arch}'): {exc}. The file may be corrupt, "
        f"or its architecture is not supported by llama-cpp-python {version}. To fix: upgrade it "
        f"(pip install -U llama-cpp-python) or use a GGUF of a supported model."
    )


def check_gguf(path: Path) -> None:
    """Fail early, naming the file, when `path` is not a GGUF file (llama.cpp would abort vaguely)."""
    if path.is_dir():
        raise ModelLoadError(
            f"LLM model {path} is a directory, not a GGUF file. To fix: set LLMConfig.model to the .gguf file itself."
        )
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head != b"GGUF":
        raise ModelLoadError(
            f"LLM model {path} is not a GGUF file (it starts with {head!r}; GGUF files start with b'GGUF'). "
            f"To fix: download the .gguf file again (it may be truncated or an HTML error page), or convert "
            f"the model with llama.cpp's convert_hf_to_gguf.py."
        )


def physical_cores(cpu_dir: Path = Path("/sys/devices/system/cpu")) -> int | None:
    """The CPU cores (not hardware threads) this process may run on, read from Linux's CPU
    topology; None where that cannot be read (another OS, a sandbox without /sys)."""
    try:
        topology = [cpu_dir / f"cpu{c}" / "topology" for c in os.sched_getaffinity(0)]
        cores = {tuple((t / f).read_text().strip() for f in ("physical_package_id", "core_id")) for t in topology}
    except (AttributeError, OSError):
        return None
    return len(cores) or None


def generation_threads(config: LLMConfig) -> int | None:
    """Threads llama.cpp generates with: the configured number, else one per core.

    llama-cpp-python's own default is half the logical CPUs (it assumes two hardware threads per
    core), which on a machine without them, like our 2-core ones, generated on one core while
    the other idled (bench/RESULTS.md, "Generation threads"). None: llama.cpp's default."""
    return config.n_threads or physical_cores()


def load_llama(path: Path, config: LLMConfig) -> tuple[Llama, threading.Lock]:
    """The loaded model and the lock that serialises calls on it (llama.cpp contexts are not
    thread-safe), shared by every LlamaCppLLM of the same file and settings in this process."""
    llama_cpp = require("llama_cpp", "llm", "Community reports and answers")
    n_gpu_layers = config.n_gpu_layers
    if n_gpu_layers is None:
        n_gpu_layers = -1 if llama_cpp.llama_supports_gpu_offload() else 0

    def load() -> tuple[Llama, threading.Lock]:
        check_gguf(path)
        verify_pinned(path)
        log.info("loading %s (n_ctx=%d, n_gpu_layers=%d)", path, config.n_ctx, n_gpu_layers)
        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=config.n_ctx,
                n_gpu_layers=n_gpu_layers,
                n_threads=generation_threads(config),
                seed=config.seed,
                verbose=False,
            )
        except Exception as exc:
            raise load_failure(path, exc, config.n_ctx, getattr(llama_cpp, "__version__", "?")) from exc
        return llama, threading.Lock()

    return cached_model("gguf", (str(path.resolve()), config.n_ctx, n_gpu_layers, config.n_threads), load)


@functools.lru_cache(maxsize=16)
def schema_grammar(schema_json: str) -> LlamaGrammar:
    """A GBNF grammar for a JSON schema whose strings cannot hold raw control characters.

    llama-cpp-python's converter lets a string contain raw newlines (invalid JSON), and small models then loop on lines
    like "\\n- 1\\n- 2" until max_tokens; JSON escapes stay allowed."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    gbnf = gbnf.replace('char ::= [^"\\\\]', 'char ::= [^"\\\\\\x7F\\x00-\\x1F]', 1)
    return LlamaGrammar.from_string(gbnf, verbose=False)


@functools.lru_cache(maxsize=64)
def text_grammar(gbnf: str) -> LlamaGrammar:
    """A compiled GBNF grammar (llama.cpp's grammar language), e.g. search answers' format."""
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


_PROBE = "tgr-system-probe-7f3a"


class _Captured(Exception):
    """Raised by the capture proxy with the model call's arguments (args[0]), to stop a chat
    handler right before it runs the model."""


class _CaptureProxy:
    """Stands in for `Llama` inside a chat handler: everything is delegated except the model run.

    This gives the exact prompt tokens and sampling arguments (stop strings, grammar) the chat format produces, so the
    context-window check is exact and one formatting path serves both `complete` and `stream`."""

    def __init__(self, llama: Llama):
        self._llama = llama

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)


class ChatTemplate:
    """What a loaded GGUF's chat format makes of messages: the exact `create_completion` arguments (prompt tokens, stop
    strings, grammar), found by running llama-cpp-python's chat handler up to the model call, so one formatting path
    serves `complete` and `stream` and the context-window check counts the real prompt. A format that drops system
    messages (gemma's) gets them merged into the first user message."""

    def __init__(self, llama: Llama, configured: str | None, path: Path, seed: int) -> None:
        self._llama, self.path, self.seed = llama, path, seed
        self.name = self._resolve(configured)
        self._handler = self._chat_handler(self.name)
        self.merges_system = not self._keeps_system_messages()

    def _resolve(self, configured: str | None) -> str:
        if configured:
            return configured
        metadata = getattr(self._llama, "metadata", {}) or {}
        if "tokenizer.chat_template" in metadata:
            return self._llama.chat_format or "chat_template.default"  # guessed by llama-cpp-python
        arch = str(metadata.get("general.architecture", ""))
        # Base models ship without a template; llama-cpp-python would silently use "llama-2".
        fallback = "gemma" if arch.startswith("gemma") else "llama-2"
        log.warning(
            "%s has no chat template; using chat_format=%r (set LLMConfig.chat_format to choose)",
            self.path.name,
            fallback,
        )
        return fallback

    def _chat_handler(self, fmt: str) -> Callable[..., Any]:
        from llama_cpp import llama_chat_format

        handlers = getattr(self._llama, "_chat_handlers", {})  # templates stored in the GGUF
        if fmt in handlers:
            return handlers[fmt]
        try:
            return llama_chat_format.get_chat_completion_handler(fmt)
        except Exception as exc:
            raise ModelLoadError(
                f"unknown chat_format {fmt!r} for {self.path}: {exc}. To fix: set LLMConfig.chat_format "
                f"to one llama-cpp-python knows (e.g. 'chatml', 'llama-3', 'gemma') or None for the GGUF's own."
            ) from exc

    def _keeps_system_messages(self) -> bool:
        """Whether the chat format renders system messages (gemma's drops them)."""
        messages = [{"role": "system", "content": _PROBE}, {"role": "user", "content": "hi"}]
        try:
            kwargs = self.arguments(messages, None, 1, 0.0, merge=False)
        except Exception:  # some templates raise on a system role: merge then
            return False
        prompt = kwargs["prompt"]
        text = self._llama.detokenize(prompt).decode("utf-8", "replace") if not isinstance(prompt, str) else prompt
        return _PROBE in text

    def _prepare(self, messages: list[dict]) -> list[dict]:
        if not self.merges_system:
            return messages
        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system" and m.get("content"))
        rest = [dict(m) for m in messages if m.get("role") != "system"]
        if not system:
            return rest
        for m in rest:
            if m.get("role") == "user":
                m["content"] = f"{system}\n\n{m.get('content') or ''}"
                break
        else:
            rest.insert(0, {"role": "user", "content": system})
        return rest

    def arguments(
        self, messages: list[dict], schema: dict | None, max_tokens: int, temperature: float, *, merge: bool = True
    ) -> dict[str, Any]:
        """The exact `create_completion` arguments the chat handler would use."""
        response_format = {"type": "json_object", "schema": schema} if schema is not None else None
        try:
            self._handler(
                llama=_CaptureProxy(self._llama),
                messages=self._prepare(messages) if merge else messages,
                temperature=temperature,
                seed=self.seed,
                response_format=response_format,
                max_tokens=max_tokens,
                repeat_penalty=1.0,
                stream=False,
            )
        except _Captured as captured:
            return captured.args[0]
        raise ModelLoadError(  # pragma: no cover - only for exotic handlers
            f"chat_format {self.name!r} does not run through create_completion; choose another LLMConfig.chat_format"
        )
