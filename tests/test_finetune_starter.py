"""The starter recipe's data (no training: `make test` never trains the starter)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tiny_graphrag.finetune import starter
from tiny_graphrag.finetune.data import read_examples
from tiny_graphrag.finetune.redocred import load_documents, sentence_examples, split_documents


def test_redocred_sentences_keep_gold_mentions_and_same_sentence_relations():
    docs, rel_info = load_documents()
    assert len(docs) == 500  # the package's copy (finetune/redocred_data/) is complete
    doc = docs[0]
    exs = sentence_examples(doc, rel_info)
    assert len(exs) == len(doc["sents"])
    names = {m["name"] for entity in doc["vertexSet"] for m in entity}
    for ex in exs:
        text, offsets = ex.joined()
        for e in ex.entities:
            assert text[offsets[e.first][0] : offsets[e.last][1]] in names
        for r in ex.relations:
            assert r.label in rel_info.values() and r.head != r.tail


def test_split_is_by_document_disjoint_and_fixed():
    docs, _ = load_documents()
    a, b = split_documents(docs, 0, 50, 100), split_documents(docs, 0, 50, 100)
    titles = {k: [d["title"] for d in v] for k, v in a.items()}
    assert titles == {k: [d["title"] for d in v] for k, v in b.items()}
    assert (len(titles["test"]), len(titles["dev"]), len(titles["train"])) == (100, 50, 350)
    assert not set(titles["test"]) & set(titles["train"]) and not set(titles["dev"]) & set(titles["train"])


def test_starter_training_data_never_shows_the_held_out_domain(tmp_path):
    data = starter.splits()
    for part in ("train", "dev", "test"):
        for ex in data[part]:
            assert not {e.label for e in ex.entities} & set(starter.HELD_OUT_ENTITIES)
            assert not {r.label for r in ex.relations} & set(starter.HELD_OUT_RELATIONS)
    assert data["domain_pool"] and all(starter.in_domain(ex) for ex in data["domain_pool"])
    # the exported JSONL reads back as the same examples
    starter.export_splits(tmp_path, {"domain_test": data["domain_test"][:20]})
    back = read_examples(tmp_path / "data" / "domain_test.jsonl")
    assert [(x.tokens, x.entities, x.relations) for x in back] == [
        (x.tokens, x.entities, x.relations) for x in data["domain_test"][:20]
    ]


def test_recipe_hash_names_the_folder_and_follows_the_recipe(tmp_path, monkeypatch):
    folder = starter.starter_dir(tmp_path)
    assert folder.parent == tmp_path and folder.name == f"starter-{starter.recipe_hash()}"
    changed = {**starter.RECIPE, "version": starter.RECIPE["version"] + 1}
    assert starter.recipe_hash(changed) != starter.recipe_hash()
    assert not starter.is_built(folder)


def test_base_starter_before_it_is_built_says_how_to_build_it(tmp_path):
    import pytest

    from tiny_graphrag.errors import ConfigError
    from tiny_graphrag.finetune.api import resolve

    with pytest.raises(ConfigError, match="make starter"):
        resolve("starter", "gliner", tmp_path)


def test_the_training_data_is_package_data_and_a_missing_copy_says_to_reinstall(tmp_path, monkeypatch):
    import pytest

    import tiny_graphrag
    from tiny_graphrag.errors import InputError
    from tiny_graphrag.finetune import redocred

    package = Path(tiny_graphrag.__file__).parent
    assert package in redocred.data_dir().parents  # never the checkout around the package
    monkeypatch.setattr(redocred, "DATA_DIR", tmp_path / "redocred_data")
    with pytest.raises(InputError, match="missing from the installed package.*pip install --force-reinstall"):
        load_documents()


def test_starter_dry_run_loads_the_data_and_finds_the_encoder_but_trains_nothing(tmp_path, capsys):
    assert starter.main(["--dry-run", "--models-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"would train {starter.starter_dir(tmp_path)} from ") and re.search(r"\btrain [1-9]", out)
    assert "redocred_data" in out and not list(tmp_path.iterdir())  # nothing written


def test_an_interrupted_starter_leaves_no_half_model_and_the_next_run_trains_only_what_is_missing(
    tmp_path, monkeypatch
):
    import pytest

    from tiny_graphrag.finetune.labels import write_trained_labels
    from tiny_graphrag.finetune.loop import TrainResult
    from tiny_graphrag.finetune.output import written_aside

    calls: list[str] = []
    stop = {"glirel"}  # the first run is stopped while GLiREL trains

    def trainer(kind):
        def train(encoder, examples, dev, out, settings, extra_info=None, **options):
            calls.append(kind)
            with written_aside(out) as folder:
                (folder / f"{kind}_config.json").write_text("{}", encoding="utf-8")
                if kind in stop:
                    raise KeyboardInterrupt  # Ctrl-C (or SIGTERM) with the model half written
                write_trained_labels(folder, kind, ["x"], files=[f"{kind}_config.json"])
            return TrainResult(steps=1, seconds=0.0, best_f1=0.5, best_step=1, final_loss=0.0, history=[])

        return train

    monkeypatch.setattr(starter, "_trainer", trainer)
    with pytest.raises(KeyboardInterrupt):
        starter.build_starter(tmp_path, progress=False)
    folder = starter.starter_dir(tmp_path)
    assert (folder / "gliner" / "gliner_config.json").is_file()
    assert sorted(p.name for p in folder.iterdir() if "glirel" in p.name) == []  # nothing half written
    assert not starter.is_built(folder)

    stop.clear()
    assert starter.build_starter(tmp_path, progress=False) == folder
    assert calls == ["gliner", "glirel", "glirel"]  # GLiNER was not trained again
    assert starter.is_built(folder)
    assert set(json.loads((folder / "training.json").read_text())) >= {"gliner", "glirel"}
