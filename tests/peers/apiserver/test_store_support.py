"""Shared builders for the store tests: a store with a fake clock and seeded randomness, and objects."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType
from kubelet_dra.peers.apiserver.store import Store

_BY_PLURAL = {rt.plural: rt for rt in RESOURCES}
NAMESPACES: ResourceType = _BY_PLURAL["namespaces"]
NODES: ResourceType = _BY_PLURAL["nodes"]
PODS: ResourceType = _BY_PLURAL["pods"]
CONFIGMAPS: ResourceType = _BY_PLURAL["configmaps"]
RESOURCECLAIMS: ResourceType = _BY_PLURAL["resourceclaims"]
RESOURCESLICES: ResourceType = _BY_PLURAL["resourceslices"]

START = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def make_store(
    *, clock: Clock | None = None, seed: int = 7, namespaces: tuple[str, ...] = ("default",), **options: Any
) -> Store:
    store = Store(clock=clock or Clock(), rng=random.Random(seed), **options)
    for name in namespaces:
        store.create(NAMESPACES, None, namespace(name))
    return store


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def configmap(name: str, *, data: dict[str, str] | None = None, **metadata: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}}
    if data is not None:
        obj["data"] = data
    return obj


def pod(name: str, *, node: str = "", spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1"}], **(spec or {})}
    if node:
        pod_spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **metadata}, "spec": pod_spec}


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]
