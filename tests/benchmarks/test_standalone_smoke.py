"""The benchmark scripts ``python -m benchmarks`` does not run, and the API server, load and registration
benchmarks it runs with ``--output json``, each run as a user types it at the least size that still goes through all
its code: it exits 0 and prints the rows (or writes the results) it promises, and the last three the figures
``python -m benchmarks`` gathers from them (``test_smoke.py`` runs the others of its benchmarks).

They are run by hand when their figures are wanted; without this a change that breaks one is found only then.
Their figures' values are not judged here, only that each is there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from benchsmoke import missing, rows, run

SECONDS = re.compile(r"[0-9.]+ s")
MILLISECONDS = re.compile(r"[0-9.]+ ms")


def _written_figures(results: Path) -> list[dict[str, Any]]:
    """The figures of a ``--results`` file, each with a value."""
    found = json.loads(results.read_text())["figures"]
    assert found and all(figure["value"] for figure in found), found
    return found


def test_the_api_server_benchmark_reports_each_operation(tmp_path: Path) -> None:
    results = tmp_path / "apiserver_bench.json"
    sizes = ("--slices", "20", "--watchers", "2", "--events", "5", "--concurrency", "2")
    done = run("benchmarks/apiserver_bench.py", *sizes, "--results", str(results))
    found = rows(done.stdout)
    operations = (
        "create ResourceSlice (POST)",
        "list, one request (v1)",
        "list, one request (v1beta1)",
        "list, one request (v1, protobuf)",
        "list, pages of 500",
    )
    for operation in operations:
        count, seconds, *_ = found[operation]
        assert count == "20" and SECONDS.fullmatch(seconds), (operation, found[operation])
    assert found["watch fan-out to 2 watchers"][0] == "10", found
    assert "target ≤ 1 s" in found["list, one request (v1)"][-1], found
    written = _written_figures(results)
    assert not missing(written, [*operations, "watch fan-out to 2 watchers"]), written


def refuse_non_json(constant: str) -> float:
    """``json.loads`` takes NaN and Infinity, which strict JSON readers (``jq``, browsers) refuse."""
    raise AssertionError(f"{constant} in a results document")


def test_the_load_benchmark_reports_both_halves_and_the_servers_memory() -> None:
    done = run("benchmarks/apiserver_load.py", *("--clients", "6", "--seconds", "2", "--slow", "1"), "--output", "json")
    summary = json.loads(done.stdout, parse_constant=refuse_non_json)
    expected = [
        "clients only: requests, p50 / p99",
        "clients only: 5xx or dropped, other 4xx",
        "+ 1 slow clients: requests, p50 / p99",
        "+ 1 slow clients: 5xx or dropped, other 4xx",
        "timed requests per second, both halves",
        "server memory before / halfway / at the end",
        "slow clients stall the others",
    ]
    assert all(figure["value"] for figure in summary["figures"]) and not missing(summary["figures"], expected), summary
    assert [half["name"] for half in summary["halves"]] == ["clients only", "+ 1 slow clients"], summary
    for half in summary["halves"]:
        assert half["requests"] > 0 and half["server_errors"] == 0 and half["p99_ms"] > 0, half
    assert summary["rss_mb"]["before"] > 0 and summary["rss_mb"].keys() == {"before", "halfway", "after"}, summary
    assert isinstance(summary["slow_clients_stall_others"], bool), summary
    assert "the others: p99 ×" in done.stderr, done.stderr  # the table and its verdict, beside the JSON


@pytest.mark.parametrize(
    ("flags", "mode", "verdicts"),
    [((), "event-driven", {"met", "not met"}), (("--kubelet-timing",), "kubelet timing", {"n/a"})],
)
def test_the_registration_benchmark_reports_the_latency_percentiles(
    tmp_path: Path, flags: tuple[str, ...], mode: str, verdicts: set[str]
) -> None:
    results = tmp_path / "registration_bench.json"
    found = rows(run("benchmarks/registration_bench.py", "--iterations", "2", *flags, "--results", str(results)).stdout)
    iterations, *latencies, verdict = found[mode]
    assert iterations == "2" and len(latencies) == 4, found
    assert all(MILLISECONDS.fullmatch(cell) for cell in latencies) and verdict in verdicts, found
    written = _written_figures(results)
    assert not missing(written, [f"{mode}, 2 registrations: p50 / p95 / p99 / max"]), written


def test_the_suites_benchmark_times_the_conformance_groups_and_the_library() -> None:
    done = run("benchmarks/suites_bench.py", "--smoke")
    found = rows(done.stdout)
    for part in ("checks HEA-*", "checks PRE-*", "checks REG-*", "checks UNP-*", "the checks chosen (no target)"):
        assert all(SECONDS.fullmatch(cell) or MILLISECONDS.fullmatch(cell) for cell in found[part]), (part, found)
    assert "4 passed, 0 skipped, 0 warning, 0 failed" in " ".join(done.stdout.split()), done.stdout  # the title
    assert "pod-lifecycle" in found and "whole library" in found, found  # a failed file is "… (FAILED)"


def test_the_process_starts_benchmark_writes_the_figures_the_docs_read(tmp_path: Path) -> None:
    results = tmp_path / "process_starts.json"
    done = run("benchmarks/process_starts.py", "--runs", "1", "--results", str(results))
    written = json.loads(results.read_text())
    assert written["runs"] == 1 and written["load"], written
    for name in ("the kubernetes client", "the reference driver (plugin)", "the simulated kubelet's run command"):
        assert written["cpu_s"][name] > 0, written
    assert all(name in done.stdout for name in written["cpu_s"]), done.stdout


def test_the_suite_time_benchmark_counts_the_processes_a_pytest_run_starts(tmp_path: Path) -> None:
    """One test that runs ``kubelet-dra services``: the run's own process and the one it starts are both counted."""
    results, test = tmp_path / "suite_time.json", "tests/peers/api/test_api_services_command.py"
    done = run("benchmarks/suite_time.py", "--results", str(results), "--", test, "-k", "json")
    written = json.loads(results.read_text())
    assert written["summary"].startswith("1 passed, 1 deselected") and not written["problems"], written
    assert written["processes_started"] == 2 and written["processes_forked"] == 0, written
    assert written["kinds"]["kubelet_dra.__main__ services"]["exited"] == 1, written["kinds"]
    assert written["kinds"]["pytest (main or worker)"]["cpu"] > 0, written["kinds"]
    assert written["cpu_s"] > 0 and written["wall_s"] > 0, written
    assert {"workers_own_cpu_s", "workers_children_cpu_s"} <= written.keys(), written
    (slowest, *_) = written["slowest"]
    assert slowest["test"].startswith(test) and slowest["phase"] and slowest["seconds"] > 0, written["slowest"]
    assert list(written["files"]) == [test], written["files"]
    assert "processes started: 2" in done.stdout, done.stdout
