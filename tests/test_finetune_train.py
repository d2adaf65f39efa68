"""Real (short) training runs of tiny GLiNER/GLiREL models, the CLI commands, and bad input."""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys

import pytest

from tiny_graphrag.errors import InputError, OutputError
from tiny_graphrag.finetune import loop
from tiny_graphrag.finetune.data import from_friendly, read_examples, write_jsonl
from tiny_graphrag.finetune.gliner import evaluate_gliner, finetune_gliner
from tiny_graphrag.finetune.glirel import evaluate_glirel, finetune_glirel
from tiny_graphrag.finetune.labels import trained_labels, write_trained_labels
from tiny_graphrag.finetune.loop import TrainSettings

pytest.importorskip("gliner")
pytest.importorskip("glirel")

PEOPLE = ["Barack Obama", "Angela Merkel", "Marie Curie", "John Smith", "Ada Lovelace", "Alan Turing", "Li Wei"]
ORGS = ["Harvard", "Google", "Siemens", "Oxford University", "Acme Corp", "NASA"]
PLACES = ["Hawaii", "Berlin", "Paris", "London", "Chicago", "Tokyo"]
# (template, relations between the slots in order of appearance)
TEMPLATES = [
    ("{p} works at {o} in {l} .", [(0, 1, "works for"), (1, 2, "located in")]),
    ("{p} was born in {l} .", [(0, 1, "born in")]),
    ("{p} studied at {o} .", [(0, 1, "educated at")]),
    ("{o} is based in {l} .", [(0, 1, "located in")]),
]
LABEL = {"p": "person", "o": "organization", "l": "location"}


def template_record(rng: random.Random) -> dict:
    template, rels = rng.choice(TEMPLATES)
    text, ents = "", []
    for piece in template.split():
        if piece.startswith("{"):
            kind = piece[1]
            value = rng.choice({"p": PEOPLE, "o": ORGS, "l": PLACES}[kind])
            start = len(text)
            text += value + " "
            ents.append({"start": start, "end": start + len(value), "label": LABEL[kind]})
        else:
            text += piece + " "
    return {
        "text": text.strip(),
        "entities": ents,
        "relations": [{"head": h, "tail": t, "label": r} for h, t, r in rels],
    }


def template_file(path, n: int, seed: int):
    rng = random.Random(seed)
    return write_jsonl(path, (template_record(rng) for _ in range(n)))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    return {
        "train": template_file(d / "train.jsonl", 200, 1),
        "dev": template_file(d / "dev.jsonl", 24, 2),
        "test": template_file(d / "test.jsonl", 40, 3),
    }


def _settings(**kw) -> TrainSettings:
    base = dict(
        epochs=1000, max_steps=150, batch_size=8, lr=3e-3, head_lr=3e-3, freeze_layers=0, eval_every=75, warmup=0.0
    )
    base.update(kw)
    return TrainSettings(progress=False, **base)


@pytest.mark.slow
def test_training_tiny_gliner_improves_entity_f1_and_is_reproducible(tiny_models_dir, data, tmp_path):
    base = tiny_models_dir / "tiny-gliner"
    test = read_examples(data["test"])
    before = evaluate_gliner(base, test).f1
    result = finetune_gliner(
        base, read_examples(data["train"]), read_examples(data["dev"]), tmp_path / "g", _settings()
    )
    after = evaluate_gliner(tmp_path / "g", test)
    assert after.f1 > before + 0.3, (before, after)
    assert result.best_f1 is not None and len(result.history) == 2
    assert trained_labels(tmp_path / "g") == ["location", "organization", "person"]
    # the same seed and data give the same model
    finetune_gliner(
        base, read_examples(data["train"]), read_examples(data["dev"]), tmp_path / "g2", _settings(max_steps=10)
    )
    finetune_gliner(
        base, read_examples(data["train"]), read_examples(data["dev"]), tmp_path / "g3", _settings(max_steps=10)
    )
    assert evaluate_gliner(tmp_path / "g2", test) == evaluate_gliner(tmp_path / "g3", test)


@pytest.mark.slow
def test_training_tiny_glirel_improves_relation_f1(tiny_models_dir, data, tmp_path):
    base = tiny_models_dir / "tiny-glirel"
    test = read_examples(data["test"])
    before = evaluate_glirel(base, test).f1
    finetune_glirel(base, read_examples(data["train"]), read_examples(data["dev"]), tmp_path / "r", _settings())
    after = evaluate_glirel(tmp_path / "r", test)
    assert after.f1 > before + 0.3, (before, after)
    assert (tmp_path / "r" / "backbone" / "config.json").is_file()  # loads after a move
    moved = tmp_path / "elsewhere"
    (tmp_path / "r").rename(moved)
    assert evaluate_glirel(moved, test) == after
    # none of the data's labels stands both ways round: all are recorded as directed, and a margin in the model's
    # config (the starter's recipe sets one) drops what GLiREL scores about alike both ways: with 1.0, everything
    config = json.loads((moved / "glirel_config.json").read_text(encoding="utf-8"))
    assert config["directed_labels"] == ["born in", "educated at", "located in", "works for"]
    (moved / "glirel_config.json").write_text(json.dumps({**config, "direction_margin": 1.0}), encoding="utf-8")
    assert after.f1 > 0 and evaluate_glirel(moved, test).f1 == 0


def test_cli_finetune_and_evaluate_in_process(tiny_models_dir, data, tmp_path, capsys):
    from tiny_graphrag.cli import main

    out = tmp_path / "cli-model"
    base = str(tiny_models_dir / "tiny-gliner")
    argv = ["models", "finetune", "gliner", "--base", base, "--data", str(data["train"]), "--eval", str(data["dev"])]
    assert main([*argv, "--out", str(out), "--max-steps", "4", "--batch-size", "4", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 4 and summary["best_eval_f1"] is not None and (out / "gliner_config.json").is_file()
    assert main(["models", "evaluate", "gliner", "--model", str(out), "--data", str(data["test"])]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("entities: P ") and "F1" in printed and "[95% " in printed
    # a relation model, evaluated on relations given the gold entities
    rel_out = tmp_path / "cli-rel"
    base = str(tiny_models_dir / "tiny-glirel")
    assert (
        main(
            [
                "models",
                "finetune",
                "glirel",
                "--base",
                base,
                "--data",
                str(data["train"]),
                "--out",
                str(rel_out),
                "--max-steps",
                "3",
            ]
        )
        == 0
    )
    assert main(["models", "evaluate", "glirel", "--model", str(rel_out), "--data", str(data["test"]), "--json"]) == 0
    capsys.readouterr()
    # bad input through the CLI: an error line naming file:line, exit status 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a b", "entities": [{"start": 0, "end": 1}]}\n', encoding="utf-8")
    assert (
        main(["models", "finetune", "gliner", "--base", str(out), "--data", str(bad), "--out", str(tmp_path / "x")])
        == 2
    )
    err = capsys.readouterr().err
    assert f"{bad}:1" in err and "entities[0].label" in err


def test_out_onto_a_folder_that_is_not_a_model_is_refused(tiny_models_dir, data, tmp_path):
    mine = tmp_path / "my-notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(OutputError, match="not a GLiNER/GLiREL model"):
        finetune_gliner(
            tiny_models_dir / "tiny-gliner", read_examples(data["train"]), None, mine, _settings(max_steps=1)
        )
    assert (mine / "todo.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("kind", ["gliner", "glirel"])
def test_out_onto_our_model_replaces_only_what_we_wrote(tiny_models_dir, data, tmp_path, kind):
    """A model folder of ours holding a user's notes, results or another model is not replaced
    (it used to be, whole, without a word); the error names what would have gone."""
    train = finetune_gliner if kind == "gliner" else finetune_glirel
    base = tiny_models_dir / f"tiny-{kind}"
    out = tmp_path / "model"
    train(base, read_examples(data["train"]), None, out, _settings(max_steps=1))
    written = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    # retraining onto our own model, with nothing else in it, replaces it
    train(base, read_examples(data["train"]), None, out, _settings(max_steps=1))
    assert set(p.name for p in out.iterdir()) == set(written)
    # a user's files beside the model files, and a model nested inside it
    (out / "NOTES.md").write_text("my notes", encoding="utf-8")
    (out / "results").mkdir()
    (out / "results" / "f1.csv").write_text("0.5", encoding="utf-8")
    nested = out / "older"
    train(base, read_examples(data["train"]), None, nested, _settings(max_steps=1))
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    with pytest.raises(OutputError, match=r"would also delete \['NOTES.md', 'older', 'results'\]"):
        train(base, read_examples(data["train"]), None, out, _settings(max_steps=1))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert (out / "NOTES.md").read_text(encoding="utf-8") == "my notes"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # nothing written aside is left


def test_out_onto_a_model_we_did_not_write_is_refused(tiny_models_dir, data, tmp_path):
    """A downloaded or hand-made GLiNER folder (no record of ours) is not ours to replace."""
    import shutil

    theirs = tmp_path / "theirs"
    shutil.copytree(tiny_models_dir / "tiny-gliner", theirs)
    (theirs / "trained_labels.json").unlink(missing_ok=True)
    before = sorted(p.name for p in theirs.iterdir())
    with pytest.raises(OutputError, match="a model that `models finetune` did not write"):
        finetune_gliner(theirs, read_examples(data["train"]), None, theirs, _settings(max_steps=1))
    assert sorted(p.name for p in theirs.iterdir()) == before


def interrupt_after_one_batch(monkeypatch) -> None:
    real = loop.batches

    def interrupted(*args, **kwargs):
        stream = real(*args, **kwargs)
        yield next(stream)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "batches", interrupted)


def test_an_interrupted_training_leaves_no_model_folder(tiny_models_dir, data, tmp_path, monkeypatch):
    interrupt_after_one_batch(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        finetune_gliner(
            tiny_models_dir / "tiny-gliner", read_examples(data["train"]), None, tmp_path / "m", _settings(max_steps=5)
        )
    assert list(tmp_path.iterdir()) == []  # neither the model folder nor the one written aside


def test_evaluation_data_without_a_label_in_common_is_refused(tiny_models_dir, data, tmp_path):
    out = tmp_path / "m"
    finetune_gliner(tiny_models_dir / "tiny-gliner", read_examples(data["train"]), None, out, _settings(max_steps=1))
    other = write_jsonl(
        tmp_path / "other.jsonl",
        [{"text": "aspirin eases pain", "entities": [{"start": 0, "end": 7, "label": "drug"}]}],
    )
    with pytest.raises(InputError, match="no entity label in common"):
        evaluate_gliner(out, read_examples(other))
    assert evaluate_gliner(out, read_examples(other), zero_shot=True).gold == 1  # scored when asked


def test_schema_label_the_model_never_saw_warns_zero_shot(tiny_models_dir, data, tmp_path, caplog):
    from _tiny_models import tiny_config

    from tiny_graphrag.extract.gliner import GlinerGlirelExtractor
    from tiny_graphrag.schema import Schema

    out = tiny_models_dir / "tuned-gliner"
    finetune_gliner(tiny_models_dir / "tiny-gliner", read_examples(data["train"]), None, out, _settings(max_steps=1))
    schema = Schema.from_dict({"entity_types": ["Person", "Drug"], "relation_types": {}})
    with caplog.at_level(logging.WARNING):
        GlinerGlirelExtractor(schema, tiny_config(gliner_model="tuned-gliner"), models_dir=tiny_models_dir)
    warned = [r.getMessage() for r in caplog.records if "zero-shot" in r.getMessage()]
    assert len(warned) == 1 and "'Drug'" in warned[0] and "'Person'" not in warned[0]  # case is ignored
    assert "(its training data had no example): it still predicts that label zero-shot, with weak" in warned[0]


def test_friendly_examples_convert_like_the_extractor_reads(data):
    ex = from_friendly(template_record(random.Random(0)))
    assert all(" " not in t for t in ex.tokens)


def test_killed_training_leaves_no_folder_and_stale_ones_are_cleaned(tiny_models_dir, data, tmp_path, monkeypatch):
    import os
    import signal

    real = loop.batches

    def killed(*args, **kwargs):
        stream = real(*args, **kwargs)
        yield next(stream)
        os.kill(os.getpid(), signal.SIGTERM)  # `kill PID`: unwinds like Ctrl-C
        yield next(stream)

    stale = tmp_path / ".m.partial-999999999"  # left by a run killed with SIGKILL
    stale.mkdir()
    monkeypatch.setattr(loop, "batches", killed)
    with pytest.raises(KeyboardInterrupt):
        finetune_gliner(
            tiny_models_dir / "tiny-gliner", read_examples(data["train"]), None, tmp_path / "m", _settings(max_steps=5)
        )
    assert list(tmp_path.iterdir()) == []


def test_min_steps_give_a_few_examples_more_passes_and_max_steps_caps(tiny_models_dir, data, tmp_path):
    train = read_examples(data["train"])[:4]
    one_pass = TrainSettings(epochs=1, batch_size=4, min_steps=5, progress=False)
    assert finetune_gliner(tiny_models_dir / "tiny-gliner", train, None, tmp_path / "a", one_pass).steps == 5
    capped = TrainSettings(epochs=1, batch_size=4, min_steps=5, max_steps=3, progress=False)
    assert finetune_gliner(tiny_models_dir / "tiny-gliner", train, None, tmp_path / "b", capped).steps == 3
    enough = TrainSettings(epochs=3, batch_size=2, min_steps=0, progress=False)
    assert finetune_gliner(tiny_models_dir / "tiny-gliner", train, None, tmp_path / "c", enough).steps == 6


_TRAIN_AND_HASH = """
import hashlib, sys
from pathlib import Path
import torch
from tiny_graphrag.finetune.data import read_examples
from tiny_graphrag.finetune.gliner import finetune_gliner
from tiny_graphrag.finetune.glirel import finetune_glirel
from tiny_graphrag.finetune.loop import TrainSettings

gliner, glirel, train, out = Path(sys.argv[1]), Path(sys.argv[2]), read_examples(sys.argv[3]), Path(sys.argv[4])
settings = TrainSettings(epochs=1000, max_steps=6, batch_size=8, lr=3e-3, head_lr=3e-3, freeze_layers=0, progress=False)
finetune_gliner(gliner, train, None, out / "g", settings)
finetune_glirel(glirel, train, None, out / "r", settings)
digest = hashlib.sha256()
for f in sorted(out.rglob("*")):
    if f.suffix in (".bin", ".pt", ".safetensors"):
        if f.suffix == ".safetensors":
            from safetensors.torch import load_file
            state = load_file(str(f))
        else:
            state = torch.load(f, map_location="cpu", weights_only=True)
        for key in sorted(state):
            digest.update(key.encode() + state[key].float().numpy().tobytes())
print(digest.hexdigest())
"""


@pytest.mark.slow
@pytest.mark.parametrize("start", ["trained models", "an encoder"])
def test_training_is_reproducible_across_processes(start, tiny_models_dir, data, tmp_path):
    """Python salts string hashing per process: GLiNER's and GLiREL's collators ordered the sampled
    labels through a set, so one seed gave another model in every process. And torch starts each
    process with a random seed: GLiNER and GLiREL built on a plain encoder (the starter's recipe)
    drew their new layers from it. Two processes with different hash seeds must train the same weights."""
    if start == "an encoder":
        from devmodels import build_tiny_encoder

        gliner = glirel = build_tiny_encoder(tmp_path / "encoder")
    else:
        gliner, glirel = tiny_models_dir / "tiny-gliner", tiny_models_dir / "tiny-glirel"
    digests = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = tmp_path / f"run{hash_seed}"
        done = subprocess.run(
            [sys.executable, "-c", _TRAIN_AND_HASH, str(gliner), str(glirel), str(data["train"]), str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        digests.append(done.stdout.strip().splitlines()[-1])
    assert digests[0] == digests[1]


def test_training_leaves_the_callers_random_state_alone():
    """Seeding for training is a library's business, not the notebook's: Python's, numpy's and
    torch's generators continue afterwards as if training had not run."""
    import numpy as np
    import torch

    def draws() -> tuple:
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    expected = draws()
    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    with loop.seeded(0):
        inside = draws()
        random.seed(9)  # whatever training does in between
    assert draws() == expected
    with loop.seeded(0):
        assert draws() == inside  # and the same seed gives the same draws every time


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-steps", "0", "must be >= 1, got 0"),  # was ignored: 0 trained the full 200 steps
        ("--max-steps", "-3", "must be >= 1, got -3"),  # was "-3 steps" and an untrained model written
        ("--freeze-layers", "-1", "must be >= 0, got -1"),
        ("--epochs", "nan", "must be a number, not NaN, got nan"),  # was a traceback
        ("--lr", "inf", "must be in (0, 1], got inf"),  # was a model of NaN weights written
        ("--seed", "-1", "must be in [0, 4294967295], got -1"),  # was numpy's traceback
        ("--batch-size", "0", "must be >= 1, got 0"),
        ("--batch-size", "two", "expected an integer, got 'two'"),
    ],
)
def test_training_options_out_of_range_are_refused_before_any_work(tmp_path, capsys, option, value, message):
    from tiny_graphrag.cli import main

    argv = ["models", "finetune", "gliner", "--base", "starter", "--data", str(tmp_path / "none.jsonl")]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", str(tmp_path / "m"), option, value])
    assert exit_.value.code == 2
    assert f"argument {option}: {message}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_training_settings_from_python_name_the_field_before_reading_anything(tmp_path):
    from tiny_graphrag.errors import ConfigError
    from tiny_graphrag.finetune.api import evaluate, finetune

    missing = tmp_path / "none.jsonl"  # never read: the settings are checked first
    with pytest.raises(ConfigError, match=r"^TrainSettings\.max_steps must be >= 1 or None, got 0"):
        finetune("gliner", "starter", missing, tmp_path / "m", max_steps=0)
    with pytest.raises(ConfigError, match=r"^TrainSettings\.batch_size must be an integer, got '8'"):
        finetune("gliner", "starter", missing, tmp_path / "m", batch_size="8")
    with pytest.raises(ConfigError, match=r"^TrainSettings\.threshold must be in \[0, 1\], got 2"):
        evaluate("gliner", "starter", missing, threshold=2)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match=r"^TrainSettings\.warmup must be in \[0, 1\], got 1.5"):
        TrainSettings(warmup=1.5)


def test_the_python_api_defaults_are_the_settings_defaults():
    """`finetune()` spells its options out for readers and type checkers; they must not drift from
    TrainSettings', which the command line reads."""
    import inspect

    from tiny_graphrag.finetune.api import finetune

    defaults = TrainSettings()
    shared = [p for p in inspect.signature(finetune).parameters.values() if hasattr(defaults, p.name)]
    assert len(shared) >= 8
    assert {p.name: p.default for p in shared} == {p.name: getattr(defaults, p.name) for p in shared}


# ---- bad input: issue 44's probe of `models finetune|evaluate`, and issue 43's ------------------
def test_ctrl_c_in_finetune_says_nothing_was_written(tiny_models_dir, data, tmp_path, monkeypatch, capsys):
    """It said "rerun the same command to resume from the cache": training keeps no cache."""
    from tiny_graphrag.cli import main

    interrupt_after_one_batch(monkeypatch)
    out = tmp_path / "m"
    argv = ["models", "finetune", "gliner", "--base", str(tiny_models_dir / "tiny-gliner"), "--out", str(out)]
    assert main([*argv, "--data", str(data["train"]), "--max-steps", "5"]) == 130
    err = capsys.readouterr().err
    assert f"interrupted: nothing was written to {out}; rerun the same command to start again" in err
    assert "cache" not in err and not out.exists()


@pytest.mark.parametrize("files", [{"config.json": "{}"}, {"config.json": "not json"}, {"gliner_config.json": "{}"}])
def test_a_folder_that_is_no_model_gets_a_short_error_with_the_fix(data, tmp_path, capsys, no_network, files):
    """transformers' 4.8 KB list of model types was printed, and no fix."""
    from tiny_graphrag.cli import main

    folder = tmp_path / "garbage"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    commands = [["finetune", "gliner", "--base", str(folder), "--out", str(tmp_path / "m")], ["evaluate", "gliner"]]
    if "config.json" in files:  # an encoder folder, as far as its name goes: GLiREL builds on one too
        commands += [
            ["finetune", "glirel", "--base", str(folder), "--out", str(tmp_path / "m")],
            ["evaluate", "glirel"],
        ]
    for command in commands:
        model = ["--model", str(folder)] if command[0] == "evaluate" else []
        assert main(["models", *command, *model, "--data", str(data["test"])]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: could not load the GL") and err.count("\n") == 1 and len(err) < 700, err
        assert str(folder) in err and "models list" in err and "make starter" in err and "network" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage"]


def test_a_model_of_the_other_kind_is_named_as_such(tiny_models_dir, data, tmp_path, capsys):
    """`evaluate glirel` on a fine-tuned GLiNER was called a label mismatch."""
    import shutil

    from tiny_graphrag.cli import main

    gliner = tmp_path / "tuned-gliner"
    shutil.copytree(tiny_models_dir / "tiny-gliner", gliner)
    write_trained_labels(gliner, "gliner", ["location", "organization", "person"])
    for command, model, what in (
        (["evaluate", "glirel", "--model"], gliner, "a GLiNER model, not a GLiREL one"),
        (["evaluate", "gliner", "--model"], tiny_models_dir / "tiny-glirel", "a GLiREL model, not a GLiNER one"),
        (["finetune", "glirel", "--out", str(tmp_path / "m"), "--base"], gliner, "a GLiNER model, not a GLiREL one"),
    ):
        assert main(["models", *command, str(model), "--data", str(data["test"])]) == 2
        err = capsys.readouterr().err
        other = what.split()[1].lower()
        assert f"{model} is {what}" in err and f"`tiny-graphrag models finetune|evaluate {other}`" in err, err
        assert "in common" not in err
    assert not (tmp_path / "m").exists()


def test_cuda_without_cuda_is_said_so_not_a_model_that_fails_to_load(
    tiny_models_dir, data, tmp_path, capsys, monkeypatch
):
    torch = pytest.importorskip("torch")
    from tiny_graphrag.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    for command in (
        ["finetune", "gliner", "--base", str(tiny_models_dir / "tiny-gliner"), "--out", str(tmp_path / "m")],
        ["evaluate", "glirel", "--model", str(tiny_models_dir / "tiny-glirel")],  # was a traceback
    ):
        assert main(["models", *command, "--data", str(data["test"]), "--device", "cuda"]) == 2
        err = capsys.readouterr().err
        assert "CUDA was requested (device 'cuda') but torch sees no CUDA device" in err, err
        assert "use --device cpu, or install a CUDA build of torch" in err and "could not load" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "error",
    [
        MemoryError(),
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: you tried to "
            "allocate 9437184 bytes. Error code 12 (Cannot allocate memory)"
        ),
    ],
)
def test_running_out_of_memory_names_the_batch_size(tiny_models_dir, data, tmp_path, monkeypatch, error):
    """Issue 43: not enough memory for a long recipe -> an error naming --batch-size (was CUDA's only)."""
    from tiny_graphrag.errors import ConfigError
    from tiny_graphrag.finetune.gliner import GlinerTrainable

    def no_memory(self, batch):
        raise error

    monkeypatch.setattr(GlinerTrainable, "loss", no_memory)
    with pytest.raises(
        ConfigError,
        match=r"training ran out of memory with --batch-size 8: pass a smaller --batch-size \(e\.g\. 4\), or free memory",
    ):
        finetune_gliner(
            tiny_models_dir / "tiny-gliner", read_examples(data["train"]), None, tmp_path / "m", _settings(max_steps=2)
        )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="shape mismatch"), loop.oom_hint(8):  # other errors pass through
        raise RuntimeError("shape mismatch")


def test_labels_the_base_knows_but_the_data_lacks_are_named(tiny_models_dir, data, tmp_path, caplog):
    """Issue 43: training data with no example of a type -> the type named, and what the model still does with it."""
    import shutil

    from tiny_graphrag.finetune.api import finetune

    base = tmp_path / "base"
    shutil.copytree(tiny_models_dir / "tiny-gliner", base)
    write_trained_labels(base, "gliner", ["drug", "person"])
    with caplog.at_level(logging.WARNING):
        finetune("gliner", base, data["train"], tmp_path / "m", max_steps=1, progress=False)
    warned = [r.getMessage() for r in caplog.records if "no example of" in r.getMessage()]
    assert len(warned) == 1 and "no example of ['drug'], which" in warned[0], warned
    assert "still predicts them from that training" in warned[0]
    assert trained_labels(tmp_path / "m") == ["drug", "location", "organization", "person"]


def test_checkpoints_are_scored_over_the_datas_labels_as_models_evaluate_scores_them(tiny_models_dir, data, tmp_path):
    """A base that knows labels the user's data lacks (a new domain leaves their mentions unlabelled): the checkpoint's
    eval F1 is measured over the data's labels only, so it equals what `models evaluate` reports for the model."""
    import dataclasses
    import shutil

    from tiny_graphrag.finetune.gliner import GlinerTrainable

    base = tmp_path / "base"
    shutil.copytree(tiny_models_dir / "tiny-gliner", base)
    write_trained_labels(base, "gliner", ["drug", "person"])
    asked: list[list[str]] = []

    def spy(model, examples, labels, threshold, batch_size=8):
        asked.append(sorted(labels))
        return evaluate_gliner.predict(model, examples, labels, threshold, batch_size)

    train, dev = read_examples(data["train"]), read_examples(data["dev"])
    spied = dataclasses.replace(evaluate_gliner, predict=spy)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(GlinerTrainable, "evaluator", spied)
        # no type head: it is fitted after the checkpoints are scored, and `models evaluate` would score it too
        result = finetune_gliner(
            base, train, dev, tmp_path / "m", _settings(max_steps=40, eval_every=40, type_head=False)
        )
    assert asked == [["location", "organization", "person"]]  # not "drug": the data has none
    assert trained_labels(tmp_path / "m") == ["drug", "location", "organization", "person"]  # still known
    reported = evaluate_gliner(tmp_path / "m", dev)
    assert result.best_f1 is not None and result.best_f1 > 0
    assert reported.f1 == pytest.approx(result.best_f1)


@pytest.mark.parametrize("kind", ["gliner", "glirel"])
def test_one_pass_at_the_lowest_threshold_filtered_by_score_is_each_thresholds_prediction(tiny_models_dir, data, kind):
    """Checkpoints are scored at every threshold from one pass (loop.Trainable.f1_by_threshold): what
    the models keep above a threshold must be what they would predict at it."""
    from tiny_graphrag.finetune.data import labels_of

    evaluator = evaluate_gliner if kind == "gliner" else evaluate_glirel
    model = evaluator.load(tiny_models_dir / f"tiny-{kind}", "cpu")
    examples = read_examples(data["dev"])
    labels = labels_of(examples)[0 if kind == "gliner" else 1]
    scores = {t: evaluator.predict(model, examples, labels, t) for t in loop.THRESHOLDS}
    low = scores[min(loop.THRESHOLDS)]
    what = "entities" if kind == "gliner" else "relations"
    assert sum(len(getattr(ex, what)) for ex in low) > 0  # something to filter
    for t, at_t in scores.items():
        kept = evaluator.above(low, t)
        assert [set(getattr(x, what)) for x in kept] == [set(getattr(x, what)) for x in at_t], t


@pytest.mark.parametrize("kind", ["gliner", "glirel"])
def test_frozen_encoder_layers_train_in_eval_mode(tiny_models_dir, data, tmp_path, monkeypatch, kind):
    """Recipe v6: while training, every encoder module with nothing to learn is in eval mode (its dropout off), every
    module that learns in training mode; after a checkpoint's evaluation the next step turns them on again."""
    from tiny_graphrag.finetune.gliner import GlinerTrainable
    from tiny_graphrag.finetune.glirel import GlirelTrainable

    trainable = GlinerTrainable if kind == "gliner" else GlirelTrainable
    seen: list[tuple[bool, bool]] = []
    real_loss = trainable.loss

    def loss(self, batch):
        modules = [m for m in self.encoder.modules() if list(m.parameters())]
        frozen = [m for m in modules if not any(p.requires_grad for p in m.parameters())]
        learning = [m for m in modules if any(p.requires_grad for p in m.parameters())]
        assert frozen and learning  # freeze_layers=1: both kinds are there
        seen.append((any(m.training for m in frozen), all(m.training for m in learning)))
        return real_loss(self, batch)

    monkeypatch.setattr(trainable, "loss", loss)
    finetune = finetune_gliner if kind == "gliner" else finetune_glirel
    train, dev = read_examples(data["train"]), read_examples(data["dev"])
    finetune(
        tiny_models_dir / f"tiny-{kind}",
        train,
        dev,
        tmp_path / "m",
        _settings(max_steps=4, eval_every=2, freeze_layers=1),
    )
    assert seen == [(False, True)] * 4


@pytest.mark.parametrize(
    ("all_labels", "examples", "every"), [(True, 200, True), (True, 40, False), (False, 200, False)]
)
def test_each_example_is_asked_every_type_of_the_data_unless_sampled_as_the_starter_trains(
    tiny_models_dir, data, tmp_path, monkeypatch, all_labels, examples, every
):
    """Fine-tuning on 50 examples or more asks each example every entity type of the training and eval data, as the
    extractor asks a schema's (not a base's type the data lacks: its unlabelled mentions would teach the model to miss
    it); on fewer, and in the starter's recipe, GLiNER's sampled negatives (own types and a random few others, the
    base's too)."""
    import shutil

    from tiny_graphrag.finetune import gliner

    base = tmp_path / "base"
    shutil.copytree(tiny_models_dir / "tiny-gliner", base)
    write_trained_labels(base, "gliner", ["drug", "person"])
    asked: list[tuple[list[str], list[str]]] = []

    def spy(rng, own, pool, negatives, cap):
        labels = loop.sample_labels(rng, own, pool, negatives, cap)
        asked.append((sorted(set(own)), sorted(labels)))
        return labels

    monkeypatch.setattr(gliner, "sample_labels", spy)
    train, dev = read_examples(data["train"])[:examples], read_examples(data["dev"])
    finetune_gliner(base, train, dev, tmp_path / "m", _settings(max_steps=6, all_labels=all_labels))
    assert len(asked) == 6 * 8  # every example of 6 steps of 8
    all_types = ["location", "organization", "person"]
    if every:
        assert all(labels == all_types for _, labels in asked)
    else:
        assert all(set(own) <= set(labels) for own, labels in asked)
        assert any(labels != all_types for _, labels in asked)  # some asked fewer, or "drug"


@pytest.mark.parametrize(
    ("kind", "examples", "given", "lr", "freeze"),
    [
        ("gliner", 60, {}, 5e-5, 2),  # asked every type: the top 4 layers, at a lower rate
        ("gliner", 40, {}, 1e-4, None),  # sampled types: the top 2 at 1e-4, as before
        ("gliner", 60, {"freeze_layers": 1}, 1e-4, 1),  # the user's choice is kept
        ("gliner", 60, {"lr": 2e-4}, 2e-4, None),
        ("glirel", 60, {}, 1e-4, None),  # GLiREL's defaults are unchanged
    ],
)
def test_gliner_asked_every_type_trains_more_layers_at_a_lower_rate_unless_told(
    tiny_models_dir, data, tmp_path, monkeypatch, kind, examples, given, lr, freeze
):
    """From 50 examples, GLiNER with no --lr or --freeze-layers given trains all but the lowest 2 layers at 5e-5 (chosen on
    three dev sets, RESULTS.md); the optimizer gets that rate, freezing those layers, and the folder records both."""
    seen: dict[str, object] = {}
    real_freeze, real_params = loop.freeze_lower_layers, loop.Trainable.parameters_for

    def freeze_spy(encoder, n):
        seen["freeze"] = n
        return real_freeze(encoder, n)

    def params(self, lr_, head_lr):
        seen["lr"], seen["head_lr"] = lr_, head_lr
        return real_params(self, lr_, head_lr)

    monkeypatch.setattr(loop, "freeze_lower_layers", freeze_spy)
    monkeypatch.setattr(loop.Trainable, "parameters_for", params)
    finetune = finetune_gliner if kind == "gliner" else finetune_glirel
    train = read_examples(data["train"])[:examples]
    settings = TrainSettings(max_steps=2, progress=False, **given)
    finetune(tiny_models_dir / f"tiny-{kind}", train, None, tmp_path / "m", settings)
    assert seen == {"freeze": freeze, "lr": lr, "head_lr": pytest.approx(30 * lr)}
    recorded = json.loads((tmp_path / "m" / "trained_labels.json").read_text())["settings"]
    assert (recorded["lr"], recorded["freeze_layers"]) == (lr, freeze)
    assert recorded["all_labels"] is (examples >= 50)  # what the run did, not the option alone
