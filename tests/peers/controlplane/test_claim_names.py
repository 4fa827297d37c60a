"""Generated claim names: ``<pod>-<podClaim>-``, truncated in proportion when too long."""

from __future__ import annotations

import re

from cluster_support import create_pod, create_template, get_pod, list_claims, request
from helpers import eventually

from kubelet_dra.peers.controlplane import ControlPlane, claim_generate_name
from kubelet_dra.peers.controlplane.names import MAX_BASE_LENGTH
from kubelet_dra.peers.kube.client import KubeClient


def test_short_names_keep_both_parts_and_a_trailing_hyphen() -> None:
    assert claim_generate_name("1a", "x") == "1a-x-"
    assert claim_generate_name("p" * 30, "c" * 25) == "p" * 30 + "-" + "c" * 25 + "-"


def test_long_names_are_cut_in_proportion_without_a_trailing_hyphen() -> None:
    name = claim_generate_name("p" * 60, "c" * 30)
    assert name == "p" * 37 + "-" + "c" * 18
    assert len(name) <= MAX_BASE_LENGTH


def test_a_long_pod_name_does_not_swallow_the_pod_claim_name() -> None:
    name = claim_generate_name("web-" + "x" * 100, "gpu")
    assert name.endswith("-g") and len(name) <= MAX_BASE_LENGTH


async def test_the_apiserver_appends_five_random_characters_after_the_generated_prefix(kube: KubeClient) -> None:
    await create_template(kube, "tpl", [request("gpu", "gpu")])
    long_pod = "p" * 60
    await create_pod(kube, "1a", [{"name": "x", "resourceClaimTemplateName": "tpl"}])
    await create_pod(kube, long_pod, [{"name": "c" * 30, "resourceClaimTemplateName": "tpl"}])
    async with ControlPlane(kube):
        short = await eventually(lambda: _claim_status(kube, "1a"))
        long = await eventually(lambda: _claim_status(kube, long_pod))
    assert re.fullmatch(r"1a-x-[a-z0-9]{5}", short), short
    assert re.fullmatch("p{37}-c{18}[a-z0-9]{5}", long), long
    assert sorted(claim["metadata"]["name"] for claim in await list_claims(kube)) == sorted([short, long])


async def _claim_status(kube: KubeClient, pod: str) -> str:
    statuses = (await get_pod(kube, pod)).get("status", {}).get("resourceClaimStatuses") or []
    return statuses[0]["resourceClaimName"] if statuses else ""
