"""Fixtures for the gRPC API tests."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short directory for Unix sockets: pytest's tmp_path can exceed AF_UNIX's 107-byte limit."""
    with tempfile.TemporaryDirectory(prefix="kdra-") as directory:
        yield Path(directory)
