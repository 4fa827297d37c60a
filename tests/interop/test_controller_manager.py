"""The real kube-controller-manager 1.36 runs its DRA controllers against the embedded API server.

Its resource claim controller creates a pod's claim from a ResourceClaimTemplate and records it in
the pod's status; its garbage collector (metadata-only protobuf informers over every discovered
resource) deletes the claim with its pod. Both speak protobuf, so this holds the embedded server's
discovery, protobuf, watch and patch paths to a real client-go program.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from realk8s import Api, client_go_refusals

from kubelet_dra.workbench.testbed.serverthread import ServerThread

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def controller_manager(interop_bin: Path) -> Iterator[tuple[Api, Path]]:
    """An embedded API server of its own (the garbage collector acts on everything in it) with the real
    controller manager running the resource claim controller and the garbage collector against it."""
    directory = Path(tempfile.mkdtemp(prefix="kd-kcm-", dir="/tmp"))
    server = ServerThread(directory).start()
    log = directory / "controller-manager.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                str(interop_bin / "kube-controller-manager"),
                f"--kubeconfig={server.kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
                "--use-service-account-credentials=false",
                "--controllers=resourceclaim-controller,garbage-collector-controller",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        api = Api(server.url, server.server.admin_token, str(server.server.ca_cert_path))
        yield api, log
    finally:
        process.terminate()
        process.wait(timeout=30)
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def eventually(probe: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = probe()
        if result:
            return result
        time.sleep(0.3)
    pytest.fail(f"{what} within {timeout:g} s")


def test_claims_from_templates_are_created_and_collected_with_their_pod(controller_manager: tuple[Api, Path]):
    api, log = controller_manager
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu-template", "namespace": "default"},
        "spec": {
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pod-a", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        },
    }
    assert api("POST", "/apis/resource.k8s.io/v1/deviceclasses", device_class)[0] == 201
    assert api("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", template)[0] == 201
    code, created = api("POST", PODS, pod)
    assert code == 201, created

    def claim_statuses() -> list[dict[str, str]]:
        return api("GET", f"{PODS}/pod-a")[1].get("status", {}).get("resourceClaimStatuses", [])

    statuses = eventually(claim_statuses, "the controller manager recorded no generated claim in the pod's status")
    name = statuses[0]["resourceClaimName"]
    assert statuses == [{"name": "gpu", "resourceClaimName": name}] and name.startswith("pod-a-gpu-")
    code, claim = api("GET", f"{CLAIMS}/{name}")
    assert code == 200, claim
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    assert claim["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "pod-a",
        "uid": created["metadata"]["uid"],
        "controller": True,
    }, "as the real controller manager writes it against a real kube-apiserver 1.36 (no blockOwnerDeletion)"
    assert claim["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
                }
            ]
        }
    }

    assert api("DELETE", f"{PODS}/pod-a")[0] == 200
    eventually(lambda: api("GET", f"{CLAIMS}/{name}")[0] == 404, "the garbage collector left the pod's claim")
    assert client_go_refusals(log.read_text()) == []
