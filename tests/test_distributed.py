"""Extraction and embedding through Ray Data on a local Ray instance (2 CPUs), tiny real models.

The index built through Ray must equal the in-process build of the same inputs: graph (nodes,
edges, provenance), communities, and vectors within float tolerance.
"""

from __future__ import annotations

import os
import socket
import sys

import numpy as np
import pytest
import ray  # the 'ray' extra, part of the dev install
from _tiny_models import tiny_config

from tiny_graphrag import build_index, load_index
from tiny_graphrag.backends.embed import titled
from tiny_graphrag.config import BuildConfig, ChunkingConfig
from tiny_graphrag.errors import MissingDependencyError, ModelNotFoundError
from tiny_graphrag.extract.base import make_extractor
from tiny_graphrag.extract.ray_executor import ClusterError, RayExecutor, _check_models_here
from tiny_graphrag.schema import Schema

TEXT = (
    "Barack Obama was born in Honolulu. Obama studied at Harvard Law School in Cambridge. "
    "He worked for the University of Chicago. Michelle Robinson lived in Chicago. "
    "Angela Merkel lives in Berlin and worked for the University of Leipzig. "
) * 3
SCHEMA = Schema.from_dict(
    {
        "entity_types": ["Person", "Organization", "Location"],
        "relation_types": {
            "born in": {"allowed_head": ["Person"], "allowed_tail": ["Location"]},
            "works for": {"allowed_head": ["Person"], "allowed_tail": ["Organization"]},
            "related to": {},
        },
    }
)


@pytest.fixture(scope="module")
def local_ray():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield ray
    ray.shutdown()


def config(folder, models_dir, cache: str) -> BuildConfig:
    return BuildConfig(
        chunking=ChunkingConfig(max_tokens=24, overlap_tokens=4),
        extraction=tiny_config(entity_threshold=0.3, relation_threshold=0.0),
        models_dir=str(models_dir),
        reports=False,
        cache_dir=str(folder / f"cache-{cache}"),
    )


def document(folder):
    """A file, so its chunks are embedded with a title ("obama notes") the way the build does it."""
    doc = folder / "obama_notes.txt"
    doc.write_text(TEXT, encoding="utf-8")
    return doc


def build(folder, models_dir, name, executor=None, cache="plain", extractor=None):
    return build_index(
        [document(folder)],
        folder / name,
        schema=SCHEMA,
        config=config(folder, models_dir, cache),
        progress=False,
        executor=executor,
        extractor=extractor,
    )


def scores_apart(a: dict, b: dict) -> tuple[dict, dict, float]:
    """The data without its scores, and the scores' difference: float sums in batches of other
    shapes differ in the last bits."""
    strip = {k: v for k, v in a.items() if k != "score"}, {k: v for k, v in b.items() if k != "score"}
    return strip[0], strip[1], abs(a.get("score", 0.0) - b.get("score", 0.0))


@pytest.fixture(scope="module")
def builds(tmp_path_factory, tiny_models_dir, local_ray):
    folder = tmp_path_factory.mktemp("ray-builds")
    plain = build(folder, tiny_models_dir, "plain")
    # two actors; they embed the chunks as they extract them. Entity and alias vectors stay in
    # process (min_embed_texts): each Ray call starts its own actors (~15 s on 2 busy cores).
    executor = RayExecutor(concurrency=2, batch_size=2, min_embed_texts=10**6)
    return folder, plain, build(folder, tiny_models_dir, "ray", executor, cache="ray"), executor


def test_ray_build_equals_the_in_process_build(builds):
    _, plain, via_ray, executor = builds
    assert executor.num_cpus == 1.0  # the 2 CPUs shared out: one torch thread per actor
    assert via_ray.summary.model_calls["extraction"] == via_ray.summary.chunks >= 6  # all chunks went to the actors
    # ... and were embedded there, as the build embeds them (titled), so none is embedded twice
    assert set(executor.chunk_vectors) == {titled(c.text, "obama notes") for c in load_index(via_ray.path).chunks()}
    assert all(t.startswith("obama notes\n") for t in executor.chunk_vectors)

    a, b = load_index(plain.path), load_index(via_ray.path)
    ga, gb = a.graph(), b.graph()
    assert ga.number_of_edges() > 0
    assert sorted(ga.nodes(data=True)) == sorted(gb.nodes(data=True))  # names, types, aliases, provenance
    ea, eb = sorted(ga.edges(keys=True, data=True)), sorted(gb.edges(keys=True, data=True))
    assert [e[:3] for e in ea] == [e[:3] for e in eb]
    for x, y in zip(ea, eb):
        dx, dy, diff = scores_apart(x[3], y[3])
        assert dx == dy and diff < 1e-5  # label, weight, provenance equal; score within tolerance
    assert a.communities() == b.communities()
    for name in ("chunks", "entities"):
        ids_a, va = a.vectors(name)
        ids_b, vb = b.vectors(name)
        assert ids_a == ids_b and va.shape == vb.shape and va.shape[0] >= 6
        np.testing.assert_allclose(va, vb, atol=1e-5)
    assert a.manifest["extractor"] == b.manifest["extractor"]


def test_finished_chunks_are_not_redone(builds, tiny_models_dir):
    folder, _, first, _ = builds
    executor = RayExecutor(concurrency=1, min_embed_texts=10**6)
    again = build(folder, tiny_models_dir, "ray-again", executor, cache="ray")  # same cache: nothing left to extract
    assert again.summary.model_calls["extraction"] == 0
    assert again.summary.model_calls["extraction_cached"] == first.summary.chunks


def test_an_actor_that_dies_mid_build_is_restarted_and_redoes_no_finished_chunk(builds, tiny_models_dir, tmp_path):
    """Ray Data restarts a dead actor and reruns only the batch it held (its defaults: max_restarts
    and max_task_retries -1); batches that finished before are not sent again."""
    folder, plain, _, _ = builds
    log, crashed = tmp_path / "extracted.log", tmp_path / "crashed"

    class DiesOnSecondBatch:  # defined here, so Ray pickles it by value to the actor
        def __init__(self, inner):
            self.inner, self.name, self.calls = inner, inner.name, 0

        def describe(self):
            return self.inner.describe()

        def extract(self, chunks):
            self.calls += 1
            if self.calls == 2 and not crashed.exists():
                crashed.touch()
                os._exit(1)  # the worker process dies, as on an out-of-memory kill
            with open(log, "a", encoding="utf-8") as f:
                f.writelines(f"{c.id}\n" for c in chunks)
            return self.inner.extract(chunks)

    inner = make_extractor(SCHEMA, config(folder, tiny_models_dir, "x").extraction, models_dir=tiny_models_dir)
    executor = RayExecutor(concurrency=1, batch_size=2, min_embed_texts=10**6)
    r = build(folder, tiny_models_dir, "ray-crash", executor, cache="crash", extractor=DiesOnSecondBatch(inner))
    assert crashed.exists()  # the actor did die
    extracted = log.read_text(encoding="utf-8").split()
    assert sorted(extracted) == sorted(c.id for c in load_index(r.path).chunks())  # each chunk exactly once
    assert sorted(load_index(r.path).graph().nodes(data=True)) == sorted(
        load_index(plain.path).graph().nodes(data=True)
    )


def test_worker_without_the_model_files_names_the_path(tmp_path):
    missing = tmp_path / "nowhere" / "tiny-gliner"
    with pytest.raises(ModelNotFoundError, match=f"{missing}.*Ray worker {socket.gethostname()}"):
        _check_models_here({"gliner_model": {"path": str(missing)}, "glirel_model": None})


def test_unreachable_cluster_is_a_clear_error_within_seconds(monkeypatch):
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ClusterError, match=f"127.0.0.1:{port} cannot be reached.*ray start --head"):
        RayExecutor(f"127.0.0.1:{port}")
    with pytest.raises(ClusterError, match="not a Ray address"):
        RayExecutor("host:notaport")


def test_embedding_through_ray_equals_in_process(builds, tiny_models_dir):
    _, plain, _, _ = builds
    from tiny_graphrag.backends.embed import Embedder

    inner = Embedder(models_dir=str(tiny_models_dir))
    texts = [f"{w} number {i}" for i, w in enumerate(TEXT.split()[:40])]
    executor = RayExecutor(concurrency=1, min_embed_texts=10)
    np.testing.assert_allclose(executor.embedder(inner).embed(texts), inner.embed(texts), atol=1e-5)


def test_without_ray_installed_the_error_is_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'tiny-graphrag\[ray\]'"):
        RayExecutor()


def test_cli_ray_errors_name_the_fix(tmp_path, monkeypatch, capsys):
    from tiny_graphrag.cli.commands import main

    doc = document(tmp_path)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["build", str(doc), "--out", str(tmp_path / "g"), "--ray", f"127.0.0.1:{port}"]) == 2
    assert "cannot be reached" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["build", str(doc), "--out", str(tmp_path / "g"), "--ray"]) == 2
    assert "pip install 'tiny-graphrag[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()  # refused before any work
