"""``resource.k8s.io`` reads that work whichever of its API versions the server serves.

Like the Go DRA helpers (docs/protocol.md#helper-defaults), a read tries ``v1`` first and, on HTTP 404, the older
versions in turn; the version that answers is remembered, so later reads go straight to it.
The objects come back as the server sent them; the fields DRA drivers read (allocation results,
opaque device configuration, UIDs) have the same shape in all three versions.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path

GROUP = "resource.k8s.io"
VERSIONS: tuple[str, ...] = ("v1", "v1beta2", "v1beta1")
"""Served versions of the group, newest first: the order reads fall back in."""


class ResourceAPI:
    """Reads of DRA objects with the helper's version fallback."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube
        self._version = VERSIONS[0]

    @property
    def version(self) -> str:
        """The version reads use now: the last one that answered."""
        return self._version

    async def get(self, plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """GET one object, falling back through ``VERSIONS`` on 404.

        If every version answers 404 the first error is raised: it comes from the preferred
        version and names what is missing.
        """
        start = VERSIONS.index(self._version)
        first_error: KubeApiError | None = None
        for version in VERSIONS[start:] + VERSIONS[:start]:
            try:
                obj = await self._kube.request("GET", api_path(GROUP, version, plural, namespace=namespace, name=name))
            except KubeApiError as err:
                if not err.not_found:
                    raise
                first_error = first_error or err
                continue
            self._version = version
            return obj
        assert first_error is not None
        raise first_error

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return await self.get("resourceclaims", name, namespace)

    async def get_device_class(self, name: str) -> dict[str, Any]:
        return await self.get("deviceclasses", name)
