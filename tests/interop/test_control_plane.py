"""The interop tier's own footing: the real kube-apiserver starts and serves every DRA version."""

from __future__ import annotations

import subprocess

from realk8s import RealControlPlane


def test_the_real_apiserver_serves_resource_k8s_io(real_apiserver: RealControlPlane):
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(real_apiserver.kubeconfig), "api-versions"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    versions = result.stdout.split()
    assert {"resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"} <= set(versions)
