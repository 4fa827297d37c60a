"""The kept-alive client's GET (the DRA manager's claim reads) against the real kube-apiserver 1.36: answer for
answer the official client's, for one object, a list large enough that Go's server sends it in chunks, and errors."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from kubeconfigs import official_get
from realk8s import RealControlPlane

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path

pytestmark = pytest.mark.interop


async def test_gets_answer_as_the_official_client_does(real_apiserver: RealControlPlane) -> None:
    namespace = f"ka-{uuid.uuid4().hex[:6]}"
    real_apiserver.kubectl("create", "namespace", namespace)
    payload = "x" * 2000
    for index in range(8):  # about 16 KB of list: more than Go's server buffers before it chunks the body
        real_apiserver.kubectl("create", "configmap", f"cm-{index}", "-n", namespace, f"--from-literal=p={payload}")
    client = KubeClient.from_kubeconfig(str(real_apiserver.kubeconfig))
    try:
        one = api_path("", "v1", "configmaps", namespace=namespace, name="cm-3")
        listed = api_path("", "v1", "configmaps", namespace=namespace)
        for path in (one, listed, one):  # the list between two GETs: the kept connection carries on after it
            assert (200, await client.get(path)) == await asyncio.to_thread(
                official_get, real_apiserver.kubeconfig, path
            )
        assert len(json.dumps(await client.get(listed))) > 16000
        gone = api_path("", "v1", "configmaps", namespace=namespace, name="gone")
        with pytest.raises(KubeApiError) as fast:
            await client.get(gone)
        code, status = await asyncio.to_thread(official_get, real_apiserver.kubeconfig, gone)
        assert (fast.value.code, fast.value.reason, fast.value.message) == (code, status["reason"], status["message"])
    finally:
        client.close()
        real_apiserver.kubectl("delete", "namespace", namespace, "--wait=false")
