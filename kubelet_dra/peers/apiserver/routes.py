"""URL → what is addressed: a resource request, a discovery document, or nothing we serve.

Paths follow kube-apiserver's layout:
``/api/v1[/watch][/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]`` for the core group and
``/apis/<group>/<version>/...`` for the others. ``/api/v1/namespaces/<name>/status`` addresses
the namespace's status subresource, because no resource is named "status".
"""

from __future__ import annotations

import attrs

from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType, lookup
from kubelet_dra.peers.apiserver.status import ApiError

_NAMESPACED = {(rt.group, rt.plural) for rt in RESOURCES if rt.namespaced}


@attrs.frozen
class ResourcePath:
    """A request for a resource collection, one object, or an object's subresource."""

    rt: ResourceType
    version: str
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""
    legacy_watch: bool = False

    @property
    def is_collection(self) -> bool:
        return self.name is None


@attrs.frozen
class DiscoveryPath:
    """``/api``, ``/apis``, ``/apis/<group>`` or a group-version's resource list."""

    group: str | None = None
    version: str | None = None
    legacy_core: bool = False


def not_found(path: str) -> ApiError:
    return ApiError(404, "NotFound", f"the server could not find the requested resource ({path})", {})


def parse(path: str) -> ResourcePath | DiscoveryPath:
    """Classify ``path``; 404 NotFound for anything under /api or /apis that we do not serve."""
    segments = [segment for segment in path.split("/") if segment]
    if not segments or segments[0] not in ("api", "apis"):
        raise not_found(path)
    if segments[0] == "api":
        if len(segments) == 1:
            return DiscoveryPath(legacy_core=True)
        group, version, rest = "", segments[1], segments[2:]
        if version != "v1":
            raise not_found(path)
    else:
        if len(segments) == 1:
            return DiscoveryPath()
        if len(segments) == 2:
            return DiscoveryPath(group=segments[1])
        group, version, rest = segments[1], segments[2], segments[3:]
    if not rest:
        return DiscoveryPath(group=group, version=version)
    return _resource_path(path, group, version, rest)


def _resource_path(path: str, group: str, version: str, rest: list[str]) -> ResourcePath:
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and (group, rest[2]) in _NAMESPACED:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise not_found(path)
    rt = lookup(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in rt.subresources:
        raise not_found(path)
    if rt.namespaced and namespace is None and name is not None:
        raise not_found(path)
    if legacy_watch and subresource:
        raise not_found(path)
    return ResourcePath(rt, version, namespace, name, subresource, legacy_watch)
