"""The interop tier on a clone without the real programs: it skips, and says why, not only a row of 's'."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_a_skipped_interop_tier_prints_each_reason_naming_the_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "shared" / "interop"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/interop/test_tap_go_driver.py"],
        cwd=REPO,
        env={**os.environ, "KDRA_INTEROP_DIR": str(missing)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (reason,) = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert f"{missing} does not exist" in reason, result.stdout
