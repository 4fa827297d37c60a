"""Fixtures of the interop tier: the real Kubernetes programs of ``../shared/interop``.

Every test in this folder is marked ``interop`` and skips, with the reason, when the programs are
absent, so a plain checkout still passes.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from realk8s import (
    INTEROP_DIR,
    RealControlPlane,
    interop_missing,
    real_kubelet_missing,
    real_kubelet_turn,
    start_control_plane,
    stop_control_plane,
)

from kubelet_dra.workbench.testbed.forked import ENABLE as FORK_DRIVERS


@pytest.fixture(autouse=True)
def _exec_every_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interop tier execs every process, as a user's run does: beside the real programs, what /proc shows of
    ours is theirs to read (the real kubelet, a tap beside it), and its time goes to waiting on them, not starting."""
    monkeypatch.setenv(FORK_DRIVERS, "0")


@pytest.hookimpl(trylast=True)  # after the terminal reporter exists
def pytest_configure(config: pytest.Config) -> None:
    """A run that skips this tier says why (as -rs would), not only a row of 's'."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not {"s", "a", "A"} & set(reporter.reportchars):
        reporter.reportchars += "s"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.interop)


@pytest.fixture(scope="session")
def interop_bin() -> Path:
    """The directory of the unpacked real programs (dra-example-kubeletplugin, kube-apiserver, …)."""
    reason = interop_missing()
    if reason:
        pytest.skip(reason)
    result = subprocess.run([str(INTEROP_DIR / "unpack")], capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        pytest.fail(f"unpacking the interop programs failed: {result.stderr.strip()}")
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def real_apiserver(interop_bin: Path) -> Iterator[RealControlPlane]:
    """One real kube-apiserver 1.36 for the session (nodes ``node-1`` and ``node-2`` have node identities)."""
    directory = Path(tempfile.mkdtemp(prefix="kd-real-", dir="/tmp"))
    plane = start_control_plane(directory, nodes=("node-1", "node-2"))
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def turn(interop_bin: Path) -> Iterator[Path]:
    """The interop programs' dir, while the test holds the machine's one real-kubelet turn."""
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    with real_kubelet_turn():
        yield interop_bin
