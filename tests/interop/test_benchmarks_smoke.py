"""The benchmarks' rows that need the real programs, at smoke size: the Go driver and the real kube-apiserver
beside the real kubelet's own DRA manager, a pod's whole path on a real control plane (real kubelet), and simulated
nodes with their pods placed by the real scheduler; library files compared on kubelet-dra and the real kubelet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchsmoke import figures, missing, run
from realk8s import real_kubelet_missing

from kubelet_dra.workbench.fidelity.columns import COLUMNS


def test_the_manager_benchmark_runs_beside_the_real_kubelets_manager(interop_bin: Path) -> None:
    found = figures(
        "benchmarks/manager_bench.py", *("--cycles", "2", "--runs", "1", "--drivers", "example", "--apiservers", "real")
    )
    assert not missing(
        found,
        [
            "cycle p50, dra-example-kubeletplugin, real API server, 1 claim(s), 1 at once",
            "cycle p50 vs real kubelet 1.36.2",
        ],
    ), [figure["name"] for figure in found]


def test_the_pod_path_benchmark_runs_on_the_real_kubelet_and_kubelet_dra(interop_bin: Path) -> None:
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    found = figures("-m", "benchmarks", "--smoke", "--only", "path")
    assert not missing(found, ["create → Running, real kubelet", "delete → gone, real kubelet"]), found


def test_the_many_nodes_benchmark_runs_on_the_real_control_plane(interop_bin: Path) -> None:
    found = figures("benchmarks/many_nodes.py", *("--nodes", "2", "--apiservers", "real", "--steady", "1"))
    assert not missing(
        found,
        [
            "all Ready with slices, 2 nodes, real API server",
            "memory per node, 2 nodes, real API server",
            "pods to Running, 2 nodes, real API server",
            "nodes Ready during the pods, 2 nodes, real API server",
        ],
    ), [figure["name"] for figure in found]


def test_the_replay_benchmark_runs_the_library_with_a_real_driver(interop_bin: Path) -> None:
    found = figures("benchmarks/replay_drivers.py", "--drivers", "reference,example", "--smoke")
    assert not missing(
        found,
        [
            "library with example: held / skipped / failed",
            "library with example: wall time",
            "library with reference: wall time",
        ],
    ), [figure["name"] for figure in found]


def test_the_conformance_benchmark_measures_a_real_driver(interop_bin: Path, tmp_path: Path) -> None:
    results = tmp_path / "conformance.json"
    done = run("benchmarks/conformance_drivers.py", "--rows", "example-gpu", "--results", str(results))
    row = json.loads(results.read_text())["rows"]["example-gpu"]
    assert row["exit_code"] == 0 and row["counts"]["passed"] > 0 and not row["failed"], row
    assert "| example driver, `gpu` |" in done.stdout, "it prints the docs' table"


def test_the_library_comparison_runs_a_file_on_both_nodes_and_names_a_refusal(
    interop_bin: Path, tmp_path: Path
) -> None:
    """Not under the test's own turn: the script takes the real-kubelet lock for each file itself."""
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    results = tmp_path / "compare.json"
    command = ["benchmarks/compare_library.py", "--files", "pod-lifecycle", "health-negotiation-1-37"]
    done = run(*command, "--results", str(results), timeout=600)
    files = json.loads(results.read_text())["files"]
    compared, refused = files["pod-lifecycle"], files["health-negotiation-1-37"]
    assert compared["oracle"] == "real kubelet" and compared["simulated"]["held"] and compared["real"]["held"], compared
    assert list(compared["columns"]) == list(COLUMNS)
    assert refused["exit_code"] == 2 and any("kubeletVersion 1.37" in reason for reason in refused["refused"]), refused
    assert "| health-negotiation-1-37 | refused: node.kubeletVersion 1.37" in done.stdout, "it prints the docs' table"
