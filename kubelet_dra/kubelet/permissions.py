"""What a simulated node's credentials must allow, checked when the node starts.

The table is the one ``deploy/`` grants (a test keeps the two equal) and ``docs/real-cluster.md``
explains. A node identity (``system:node:<name>``) is given all of it by the Node authorizer, but only
for its own name, so there the name is what is checked; any other identity is asked about each entry.
``deploy/``'s admission policy narrows the grant to the fleet's own simulated nodes, which are told by
their name and, for a Node, a label: a Node the policy refuses fails the node's registration.
"""

from __future__ import annotations

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.kube.access import MASTERS, Permission, denied, whoami
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient

LEASE_NAMESPACE = "kube-node-lease"
SIMULATED_NODE_PREFIX = "kubelet-dra-sim-"
SIMULATED_LABEL = "kubelet-dra.io/simulated"
"""deploy/15-policy.yaml lets kubelet-dra's accounts write only Nodes named ``SIMULATED_NODE_PREFIX…`` and labelled
``SIMULATED_LABEL=true``, and the Leases, pods, slices and events of nodes so named (a test keeps it equal)."""
REGISTER_FIX = (
    f"run a node these credentials may register: with deploy/, name it {SIMULATED_NODE_PREFIX}* and pass"
    f" --node-label {SIMULATED_LABEL}=true (docs/real-cluster.md)"
)
FIX = (
    "bind the ClusterRole kubelet-dra-node and, in kube-node-lease, the Role kubelet-dra-node-lease of"
    " deploy/10-rbac.yaml to it (docs/real-cluster.md), or use the node's own kubeconfig (system:node:<node>)"
)


def node_permissions(
    node: str, *, registers: bool = True, runs_pods: bool = True, dry_run_wipes: bool = False
) -> list[Permission]:
    """What the node sends: its Node and Lease when it ``registers``, slice wipes, and for ``runs_pods`` its
    pods, their claims and events."""
    on_node = f"spec.nodeName={node}"
    wipe = "list" if dry_run_wipes else "deletecollection"
    permissions = [
        Permission("get", "nodes", "read its Node before each ResourceSlice wipe"),
        Permission(wipe, "resourceslices", "wipe its ResourceSlices", group="resource.k8s.io", field_selector=on_node),
    ]
    if registers:
        permissions += [
            Permission("create", "nodes", "register its Node"),
            Permission("patch", "nodes", "post the status heartbeat", subresource="status"),
            *(
                Permission(verb, "leases", "renew its Lease", group="coordination.k8s.io", namespace=LEASE_NAMESPACE)
                for verb in ("get", "create", "update")
            ),
        ]
    if runs_pods:
        permissions += [
            *(
                Permission(verb, "pods", "follow the pods bound to it", field_selector=on_node)
                for verb in ("list", "watch")
            ),
            Permission("patch", "pods", "report pod status", subresource="status"),
            Permission("delete", "pods", "finish a pod's deletion"),
            Permission("get", "resourceclaims", "read the claims of its pods", group="resource.k8s.io"),
            Permission("create", "events", "record Warning events about its pods"),
        ]
    return permissions


def registration_refused(node: str, err: KubeApiError, where: str) -> ConfigError:
    """The node cannot start: the server refuses its Node (an admission policy such as deploy/'s)."""
    return ConfigError(f"the API server refuses to register Node {node}: {err.message}", where=where, fix=REGISTER_FIX)


async def check_access(kube: KubeClient, node: str, permissions: list[Permission]) -> None:
    """Raise ``ConfigError`` naming every permission the server refuses; say nothing when it cannot be asked."""
    subject = await whoami(kube)
    if subject is None or MASTERS in subject.groups:
        return
    if subject.node is not None:
        if subject.node != node:
            raise ConfigError(
                f"these credentials are node {subject.node}'s ({subject.user}): the Node authorizer lets a node act"
                " as itself only",
                where=kube.host,
                fix=f"run with --node-name {subject.node}, or use the kubeconfig of system:node:{node}",
            )
        return
    refused = await denied(kube, permissions)
    if refused:
        raise ConfigError(
            f"{subject.user} may not do all a node does: {len(refused)} permission(s) missing",
            where=kube.host,
            fix=FIX,
            details="\n".join(
                f"cannot {permission} (to {permission.why}): {reason or 'denied'}" for permission, reason in refused
            ),
        )
