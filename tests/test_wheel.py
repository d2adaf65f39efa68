"""The built wheel works installed, outside the checkout (scripts/check_wheel.sh, which CI also runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_installed_wheel_builds_queries_serves_and_finds_the_starter_data_from_an_empty_folder():
    # PY: the interpreter running the tests, whose virtualenv lends the fresh one its dependencies
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "check_wheel.sh")],
        env={**os.environ, "PY": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "works installed, outside the checkout" in proc.stdout
