"""What a wheel user gets: the package built from this checkout (its source distribution, then the wheel built
from that, as pip and tox build it) carries the scenario library and the type marker."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "kubelet_dra", "scenarios")


def build(kind: str, source: Path, into: Path) -> Path:
    """Build the ``sdist`` or ``wheel`` of ``source`` into ``into`` with setuptools' own backend, as pip does."""
    script = f"from setuptools import build_meta as b; import sys; print(b.build_{kind}(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", script, str(into)], cwd=source, capture_output=True, text=True, check=True, timeout=120
    )
    return into / done.stdout.split()[-1]


def test_the_wheel_built_from_the_source_distribution_carries_the_scenario_library(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tree / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy(source, tree / name)
    assert (tree / "kubelet_dra" / "scenarios").is_symlink(), "the package links to the top-level scenarios/"
    sdist = build("sdist", tree, tmp_path / "sdist")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    wheel = build("wheel", next((tmp_path / "unpacked").iterdir()), tmp_path / "wheel")
    names = set(zipfile.ZipFile(wheel).namelist())
    library = {f"kubelet_dra/scenarios/{path.name}" for path in (REPO / "scenarios").iterdir()}
    assert library - names == set(), "every file of scenarios/ is in the wheel"
    assert "kubelet_dra/py.typed" in names
