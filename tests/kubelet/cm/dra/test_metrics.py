"""The kubelet's DRA metrics, scraped from a node's ``/metrics`` like Prometheus would, after real driver calls."""

from __future__ import annotations

import socket

import aiohttp
import pytest
from nodeenv import GPU, NodeEnv
from prometheus_client.parser import text_string_to_metric_families

from kubelet_dra.kubelet.cm.dra import PrepareError
from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.peers.errors import ConfigError

OPERATIONS = "dra_operations_duration_seconds"
GRPC = "dra_grpc_operations_duration_seconds"
IN_USE = "dra_resource_claims_in_use"
PREPARE_METHOD = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
UNPREPARE_METHOD = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition by (sample name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(text: str, sample: str, **labels: str) -> float | None:
    return samples(text).get((sample, frozenset(labels.items())))


def in_use(text: str) -> dict[str, float]:
    return {dict(labels)["driver_name"]: v for (sample, labels), v in samples(text).items() if sample == IN_USE}


async def scrape(node: Node) -> str:
    async with aiohttp.ClientSession() as session, session.get(node.metrics_url) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return await response.text()


async def prepared_pod(env: NodeEnv) -> dict:
    """A pod of this node with one claim allocated device-0 and reserved for it."""
    pod = env.pod()
    claim = await env.claim(reserved_for=[pod])
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    return pod


async def test_prepare_and_unprepare_are_timed_and_prepared_claims_counted_over_http(env: NodeEnv) -> None:
    async with env.node(metrics_port=0) as node:
        assert in_use(await scrape(node)) == {"<any>": 0.0}
        await env.start_driver(node)
        manager = env.manager(node)
        pod = await prepared_pod(env)

        await manager.prepare_resources(pod)
        text = await scrape(node)
        assert value(text, f"{OPERATIONS}_count", operation_name="PrepareResources", is_error="false") == 1
        grpc_ok = {"driver_name": GPU, "method_name": PREPARE_METHOD, "grpc_status_code": "OK"}
        assert value(text, f"{GRPC}_count", **grpc_ok) == 1
        assert in_use(text) == {"<any>": 1.0, GPU: 1.0}
        assert "# HELP dra_operations_duration_seconds [ALPHA] " in text
        buckets = [
            float(dict(labels)["le"])
            for (sample, labels) in samples(text)
            if sample == f"{GRPC}_bucket" and dict(labels)["method_name"] == PREPARE_METHOD
        ]
        assert len(buckets) == 16  # 15 buckets and +Inf
        assert sorted(buckets)[0] == 0.1 and sorted(buckets)[14] == pytest.approx(40.0)
        assert not any(sample.endswith("_created") for sample, _ in samples(text))

        await manager.unprepare_resources(pod)
        text = await scrape(node)
        assert value(text, f"{OPERATIONS}_count", operation_name="UnprepareResources", is_error="false") == 1
        grpc_ok["method_name"] = UNPREPARE_METHOD
        assert value(text, f"{GRPC}_count", **grpc_ok) == 1
        assert in_use(text) == {"<any>": 0.0}
        assert text == node.metrics_text()


async def test_failed_prepare_is_an_error_operation_and_its_call_has_the_grpc_code(env: NodeEnv) -> None:
    async with env.node() as node:
        driver = await env.start_driver(node)
        manager = env.manager(node)
        pod = await prepared_pod(env)
        await driver.fault("set", "prepare-error=no power")

        with pytest.raises(PrepareError):
            await manager.prepare_resources(pod)

        text = node.metrics_text()
        assert value(text, f"{OPERATIONS}_count", operation_name="PrepareResources", is_error="true") == 1
        assert value(text, f"{OPERATIONS}_count", operation_name="PrepareResources", is_error="false") is None
        [(code, count)] = [
            (dict(labels)["grpc_status_code"], v)
            for (sample, labels), v in samples(text).items()
            if sample == f"{GRPC}_count"
        ]
        assert (code, count) == ("Unknown", 1)
        assert in_use(text) == {"<any>": 0.0}


async def test_call_past_its_deadline_counts_as_deadline_exceeded(env: NodeEnv) -> None:
    async with env.node(call_timeout=0.5) as node:
        driver = await env.start_driver(node)
        manager = env.manager(node)
        pod = await prepared_pod(env)
        await driver.fault("set", "prepare-block")
        try:
            with pytest.raises(PrepareError, match="DeadlineExceeded"):
                await manager.prepare_resources(pod)
        finally:
            await driver.fault("clear", "prepare-block")

        text = node.metrics_text()
        labels = {"driver_name": GPU, "method_name": PREPARE_METHOD, "grpc_status_code": "DeadlineExceeded"}
        assert value(text, f"{GRPC}_count", **labels) == 1
        assert value(text, f"{GRPC}_sum", **labels) >= 0.5


async def test_claims_restored_from_the_checkpoint_count_only_once_prepared_again(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        pod = await prepared_pod(env)
        await env.manager(node).prepare_resources(pod)
        assert in_use(node.metrics_text())["<any>"] == 1

        restarted = env.manager(node)  # a kubelet restart: the cache comes back from the checkpoint
        assert len(restarted.cache) == 1
        assert in_use(node.metrics_text()) == {"<any>": 0.0}

        await restarted.prepare_resources(pod)
        assert in_use(node.metrics_text()) == {"<any>": 1.0, GPU: 1.0}


async def test_each_node_has_its_own_metrics(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        await env.manager(node).prepare_resources(await prepared_pod(env))
        other = Node("other-node", str(env.root / "other-reg"))
        assert (
            value(
                node.metrics_text(), f"{GRPC}_count", driver_name=GPU, method_name=PREPARE_METHOD, grpc_status_code="OK"
            )
            == 1
        )
        assert f"{GRPC}_count" not in other.metrics_text()


async def test_busy_metrics_port_is_a_config_error_naming_the_flag(env: NodeEnv) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError) as raised:
            async with env.node(metrics_port=port):
                pass
    assert raised.value.where == "--metrics-port"
    assert f"127.0.0.1:{port}" in str(raised.value)
