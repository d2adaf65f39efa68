"""GGUF model files for llama.cpp: header checks, loading once per process, output grammars.

`llama_cpp` is imported only when a model is loaded or a grammar built.
"""

from __future__ import annotations

import functools
import logging
import struct
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .config import LLMConfig
from .errors import ModelLoadError, require
from .loaded import cached_model
from .models import verify_pinned

if TYPE_CHECKING:  # pragma: no cover
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

log = logging.getLogger(__name__)


def gguf_architecture(path: Path) -> str | None:
    """`general.architecture` read from the GGUF header (for error messages), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    key = b"general.architecture"
    i = head.find(key)
    if i < 0:
        return None
    j = i + len(key)
    try:
        vtype, length = struct.unpack_from("<IQ", head, j)
    except struct.error:
        return None
    if vtype != 8 or length > 256:  # 8 = GGUF string
        return None
    return head[j + 12 : j + 12 + length].decode("utf-8", "replace")


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


def load_llama(path: Path, config: LLMConfig) -> tuple["Llama", threading.Lock]:
    """The loaded model and the lock that serialises calls on it (llama.cpp contexts are not
    thread-safe), shared by every LlamaCppLLM of the same file and settings in this process."""
    llama_cpp = require("llama_cpp", "llm", "Community reports and answers")
    n_gpu_layers = config.n_gpu_layers
    if n_gpu_layers is None:
        n_gpu_layers = -1 if llama_cpp.llama_supports_gpu_offload() else 0

    def load() -> tuple["Llama", threading.Lock]:
        check_gguf(path)
        verify_pinned(path)
        log.info("loading %s (n_ctx=%d, n_gpu_layers=%d)", path, config.n_ctx, n_gpu_layers)
        try:
            llama = llama_cpp.Llama(model_path=str(path), n_ctx=config.n_ctx, n_gpu_layers=n_gpu_layers,
                                    n_threads=config.n_threads, seed=config.seed, verbose=False)
        except Exception as exc:
            arch = gguf_architecture(path) or "unknown"
            version = getattr(llama_cpp, "__version__", "?")
            raise ModelLoadError(
                f"llama.cpp could not load {path} (architecture '{arch}'): {exc}. The file may be corrupt, "
                f"or its architecture is not supported by llama-cpp-python {version}. To fix: upgrade it "
                f"(pip install -U llama-cpp-python) or use a GGUF of a supported model."
            ) from exc
        return llama, threading.Lock()

    return cached_model("gguf", (str(path.resolve()), config.n_ctx, n_gpu_layers, config.n_threads), load)


@functools.lru_cache(maxsize=16)
def schema_grammar(schema_json: str) -> "LlamaGrammar":
    """A GBNF grammar for a JSON schema whose strings cannot hold raw control characters.

    llama-cpp-python's converter lets a string contain raw newlines (invalid JSON), and small
    models then loop on lines like "\\n- 1\\n- 2" until max_tokens; JSON escapes stay allowed.
    """
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    gbnf = gbnf.replace('char ::= [^"\\\\]', 'char ::= [^"\\\\\\x7F\\x00-\\x1F]', 1)
    return LlamaGrammar.from_string(gbnf, verbose=False)


@functools.lru_cache(maxsize=64)
def text_grammar(gbnf: str) -> "LlamaGrammar":
    """A compiled GBNF grammar (llama.cpp's grammar language), e.g. search answers' format."""
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)
