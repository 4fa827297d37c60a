"""Fixtures shared by every test folder."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_dra.apiserver.testing import ServerThread


@pytest.fixture(scope="session")
def apiserver() -> Iterator[ServerThread]:
    """One embedded API server for a whole test session, in its own thread (a short /tmp dir for its files)."""
    directory = Path(tempfile.mkdtemp(prefix="kd-api-", dir="/tmp"))
    server = ServerThread(directory).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
