"""``kubelet-dra services`` as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run_services(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "services", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "200"},  # wide enough that no name is folded
    )


def test_json_lists_wire_names_beside_advertised_identifiers():
    result = run_services("--output", "json")
    assert result.returncode == 0, result.stderr
    listing = {entry["wire_service"]: entry for entry in json.loads(result.stdout)}
    assert list(listing) == [
        "pluginregistration.Registration",
        "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin",
        "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin",
        "v1.DRAResourceHealth",
        "v1alpha1.DRAResourceHealth",
        "v1alpha3.Node",
    ]
    v1 = listing["k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"]
    assert v1["advertised"] == "v1.DRAPlugin"
    assert v1["methods"] == [
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
    ]
    assert v1["legacy"] is False
    legacy = listing["v1alpha3.Node"]
    assert (legacy["advertised"], legacy["also_advertised_as"], legacy["legacy"]) == (
        "v1alpha3.NodeService",
        ["1.0.0"],
        True,
    )
    assert listing["pluginregistration.Registration"]["advertised"] is None


def test_text_shows_the_table_and_the_pitfall():
    result = run_services()
    assert result.returncode == 0, result.stderr
    for text in (
        "v1.DRAPlugin",
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
        "/v1alpha1.DRAResourceHealth/NodeWatchResources",
        "UNIMPLEMENTED",
    ):
        assert text in result.stdout
