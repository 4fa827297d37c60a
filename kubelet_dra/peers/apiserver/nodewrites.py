"""What a node identity may write besides its ResourceSlices: what a kubelet writes.

A real cluster lets ``system:node:<name>`` write through the Node authorizer and NodeRestriction
admission: Events; its own Node (and status); its Lease in ``kube-node-lease`` and its CSINode,
both named after it; the status of pods bound to it, and their deletion. Anything else is refused,
in kube-apiserver 1.36's words (checked against a real one): the authorizer's "User cannot"
message with its reason, or the admission plugin's own sentence naming the object.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kubelet_dra.peers.apiserver.resources import COORDINATION_GROUP, STORAGE_GROUP, ResourceType

NODE_LEASE_NAMESPACE = "kube-node-lease"
_CHANGES = ("create", "update", "patch")
"""What the Node authorizer lets a node do to Events and Nodes; to its Lease and CSINode it may also ``delete``."""


@attrs.frozen
class Refusal:
    """Why a node may not make a write: ``admission`` refusals name ``name``; the others extend the authorizer's
    message with ``reason`` (none when empty)."""

    reason: str = ""
    admission: bool = False
    name: str = ""


def _names(objects: Iterable[dict[str, Any]]) -> list[str]:
    return [str((obj.get("metadata") or {}).get("name") or "") for obj in objects]


def _own_name(
    node: str, name: str, objects: Iterable[dict[str, Any]], reason: str, by_authorizer: bool
) -> Refusal | None:
    """Refuse a write to an object not named after the node: by the authorizer when ``by_authorizer`` and the
    request names it, else by admission once the objects are known (a missing object is then a 404 first)."""
    if by_authorizer and name and name != node:
        return Refusal(reason, name=name)
    for other in _names(objects):
        if other != node:
            return Refusal(reason, admission=True, name=other)
    return None


def _bound_pods(node: str, objects: Iterable[dict[str, Any]], action: str) -> Refusal | None:
    for obj in objects:
        if (obj.get("spec") or {}).get("nodeName") != node:
            reason = f'node "{node}" can only {action} pods with spec.nodeName set to itself'
            return Refusal(reason, admission=True, name=_names([obj])[0])
    return None


def kubelet_refusal(
    node: str,
    verb: str,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    subresource: str,
    objects: Iterable[dict[str, Any]],
) -> Refusal | None:
    """None when node ``node`` may make this write (ResourceSlices are judged elsewhere), else why not."""
    objects = list(objects)
    kind = (rt.group, rt.plural)
    if kind == ("", "events") and verb in _CHANGES:
        return None
    if kind == ("", "nodes") and verb in _CHANGES:
        for other in _names(objects):
            if other != node:
                return Refusal(f'node "{node}" is not allowed to modify node "{other}"', admission=True, name=other)
        return None
    if kind == (COORDINATION_GROUP, "leases") and verb in (*_CHANGES, "delete"):
        if namespace != NODE_LEASE_NAMESPACE:
            return Refusal(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        reason = "can only access node lease with the same name as the requesting node"
        return _own_name(node, name, objects, reason, by_authorizer=True)
    if kind == (STORAGE_GROUP, "csinodes") and verb in (*_CHANGES, "delete"):
        reason = "can only access CSINode with the same name as the requesting node"
        return _own_name(node, name, objects, reason, by_authorizer=False)
    if kind == ("", "pods") and subresource == "status" and verb in ("update", "patch"):
        return _bound_pods(node, objects, "update pod status for")
    if kind == ("", "pods") and not subresource and verb == "delete":
        return _bound_pods(node, objects, "delete")
    return Refusal()
