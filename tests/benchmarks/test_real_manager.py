"""The real kubelet's row of the manager benchmark (``benchmarks/real_manager.py``): the harness's own lines
read into seconds, and a failed call of the real manager stops the benchmark instead of counting as a cycle."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
spec = importlib.util.spec_from_file_location("real_manager", BENCHMARKS / "real_manager.py")
assert spec is not None and spec.loader is not None
real_manager = importlib.util.module_from_spec(spec)
sys.modules["real_manager"] = real_manager
spec.loader.exec_module(real_manager)

# As dra-manager-harness 1.36.2 printed them (-mode cycle -cycles 2), load lines aside.
OUTPUT = """\
PrepareResources(default/bench-0-402f2f) took=2.772452ms err=<nil>
UnprepareResources(default/bench-0-402f2f) took=677.827µs err=<nil>
PrepareResources(default/bench-0-402f2f) took=1.5s err=<nil>
UnprepareResources(default/bench-0-402f2f) took=1m2.5s err=<nil>
summary op=cycle n=2 p50=2.778798ms p99=4.142361ms min=2.572891ms max=4.142361ms mean=3.032152ms
cycles=2 failed=0
"""
FAILED = (
    "PrepareResources(default/bench-0-402f2f) took=1.92ms err=prepare dynamic resources: pod bench-0-402f2f"
    " (6148ed0a) is not allowed to use ResourceClaim bench-0-402f2f-0 (d8ab7b7d)\n"
)


def test_each_calls_time_is_read_in_seconds_and_the_untimed_first_cycle_dropped() -> None:
    prepare, unprepare = real_manager.timings(OUTPUT, keep_first=True)
    assert prepare == pytest.approx([0.002772452, 1.5])
    assert unprepare == pytest.approx([0.000677827, 62.5])
    assert real_manager.timings(OUTPUT) == (prepare[1:], unprepare[1:])


def test_a_failed_call_of_the_real_manager_stops_the_benchmark_with_its_words() -> None:
    with pytest.raises(real_manager.HarnessError, match="is not allowed to use ResourceClaim bench-0-402f2f-0"):
        real_manager.timings(FAILED)


@pytest.mark.parametrize("text", ["", "2.5", "ms", "1.5xs", "2ms junk"])
def test_what_is_not_a_go_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Go duration"):
        real_manager.go_duration(text)
