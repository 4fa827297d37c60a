"""The whole scenario library replayed with NVIDIA's GPU driver on mock GPUs (``replay --driver``): a driver the
files were never written for (its own name, devices and CDI names) holds them or is skipped naming the need."""

from __future__ import annotations

from pathlib import Path

import pytest
from libraryreplay import held, replay_library
from realk8s import nvidia_driver_cmd, nvidia_driver_missing

LEAST_HELD = 40


def test_the_library_holds_with_nvidia_s_driver(interop_bin: Path):
    if reason := nvidia_driver_missing():
        pytest.skip(reason)
    report = replay_library(["--driver", f"gpu={nvidia_driver_cmd()}"])
    assert len(held(report)) >= LEAST_HELD, held(report)
    assert report["cdi-two-claims-two-containers"]["result"] == "passed", "its CDI IDs, not the reference driver's"
    assert report["kubelet-restart-during-prepare"]["result"] == "passed", "a prepare held on the wire, then cut"
