"""The flags of a simulated node that ``run`` and ``debug`` share: which API server, and how the kubelet behaves.

Without ``--kubeconfig`` the embedded API server is started and its admin kubeconfig written to
``--kubeconfig-out`` for drivers; the kubelet flags default to the behaviour of the emulated release.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubelet_dra.cli.apiserver import DEFAULT_KUBECONFIG
from kubelet_dra.kubelet.cm.dra.plugin import DEFAULT_CALL_TIMEOUT, DEFAULT_WIPING_DELAY, PluginMap
from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.kubelet.nodestatus import TAINT_EFFECTS, NodeShape
from kubelet_dra.kubelet.release import DEFAULT_RELEASE, RELEASES, KubeletRelease, release
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.kube.config import SERVICE_ACCOUNT_DIR, in_cluster_kubeconfig
from kubelet_dra.peers.log import get_logger
from kubelet_dra.peers.quantity import parse_quantity
from kubelet_dra.workbench.testbed.serverprocess import ServerProcess

KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_LABELS = (
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
)
"""The labels in the reserved domains a kubelet may set on its own Node (kubelet 1.36)."""
FEATURE_GATES = {"DRAOptionalNodeOperations": "optional_node_operations"}
"""The kubelet feature gates kubelet-dra honours, by name, and the node option each one sets."""


def add_kubelet_version_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, several: bool = False
) -> None:
    """``--kubelet-version``: which kubelet release the node is, for every command that runs one (``several``:
    a comma-separated list, one run per release)."""
    parser.add_argument(
        "--kubelet-version",
        default=DEFAULT_RELEASE.name,
        metavar="VERSION[,VERSION]" if several else "VERSION",
        help=f"the kubelet release to emulate: {', '.join(RELEASES)}"
        + (", or several comma-separated, one run each" if several else "")
        + " (default: %(default)s)",
    )


def add_release_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, several: bool = False) -> None:
    """``--kubelet-version`` and ``--feature-gates``."""
    add_kubelet_version_argument(parser, several=several)
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="NAME=BOOL,…",
        help=f"kubelet feature gates, as the kubelet takes them; known: {', '.join(FEATURE_GATES)} (alpha, off)",
    )


def releases(text: str) -> list[KubeletRelease]:
    """The releases of a comma-separated ``--kubelet-version`` (``1.36,1.37``), each checked, none twice."""
    chosen = [release(name) for name in text.split(",") if name.strip()]
    if not chosen or len(set(chosen)) != len(chosen):
        raise UsageError(
            f"{text!r} does not name each kubelet release once", where="--kubelet-version", fix="e.g. 1.36,1.37"
        )
    return chosen


def release_options(args: argparse.Namespace) -> dict[str, Any]:
    """The NodeOptions fields ``--kubelet-version`` and ``--feature-gates`` set, checked."""
    values: dict[str, Any] = {"release": release(args.kubelet_version)}
    for pair in filter(None, (part.strip() for part in args.feature_gates.split(","))):
        name, equals, value = pair.partition("=")
        if name not in FEATURE_GATES:
            raise UsageError(
                f"unknown feature gate {name!r}", where="--feature-gates", fix=f"known: {', '.join(FEATURE_GATES)}"
            )
        if not equals or value.lower() not in ("true", "false"):
            raise UsageError(f"{pair!r} is not NAME=true|false", where="--feature-gates", fix=f"e.g. {name}=true")
        values[FEATURE_GATES[name]] = value.lower() == "true"
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_release_arguments(parser)
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="use this cluster's API server (default: start the embedded one)",
    )
    parser.add_argument(
        "--in-cluster",
        nargs="?",
        const=SERVICE_ACCOUNT_DIR,
        metavar="DIR",
        help="use the cluster this runs in as a pod, with its service account (token and ca.crt in DIR, default"
        " %(const)s); a kubeconfig that reads the token file is written to --kubeconfig-out, for drivers too",
    )
    parser.add_argument(
        "--kubeconfig-out",
        metavar="FILE",
        default=DEFAULT_KUBECONFIG,
        help="where the embedded API server's admin kubeconfig goes, for drivers (default: %(default)s)",
    )
    parser.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="address of the embedded API server (default: a free loopback port)",
    )
    parser.add_argument(
        "--wiping-delay",
        type=float,
        default=DEFAULT_WIPING_DELAY,
        metavar="SECONDS",
        help="wipe a driver's ResourceSlices after it had no connected instance this long (default: %(default)g)",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=DEFAULT_CALL_TIMEOUT,
        metavar="SECONDS",
        help="deadline of each NodePrepareResources/NodeUnprepareResources call (default: %(default)g)",
    )
    parser.add_argument(
        "--kubelet-timing",
        action="store_true",
        help="reconcile every second like the kubelet instead of registering as soon as a socket appears",
    )
    parser.add_argument(
        "--plugin-map",
        choices=[mode.value for mode in PluginMap],
        default=PluginMap.INSTANCES.value,
        help="instances: one entry per driver endpoint (1.33+); replace: one per driver name, the newest replaces"
        " the old, removal goes by name (<=1.32) (default: %(default)s)",
    )
    parser.add_argument(
        "--legacy-services",
        action="store_true",
        help='accept the <=1.32 service identifiers and fall back to v1alpha4 for drivers advertising "1.0.0"',
    )
    shape = NodeShape()
    parser.add_argument("--node-cpu", default=shape.cpu, metavar="QUANTITY", help="CPU the Node reports (%(default)s)")
    parser.add_argument(
        "--node-memory", default=shape.memory, metavar="QUANTITY", help="memory the Node reports (%(default)s)"
    )
    parser.add_argument("--node-pods", default=shape.pods, metavar="N", help="pods the Node takes (%(default)s)")
    parser.add_argument(
        "--node-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label of the Node, besides kubernetes.io/hostname, os and arch (repeatable)",
    )
    parser.add_argument(
        "--node-taint",
        action="append",
        default=[],
        metavar="KEY[=VALUE]:EFFECT",
        help=f"a taint of the Node, EFFECT one of {', '.join(TAINT_EFFECTS)} (repeatable)",
    )


def node_options(args: argparse.Namespace) -> NodeOptions:
    """The node's behaviour from the shared flags, checked."""
    if args.wiping_delay < 0:
        raise UsageError("the wiping delay cannot be negative", where="--wiping-delay", fix="give 0 or more seconds")
    if args.call_timeout <= 0:
        raise UsageError("the call timeout must be positive", where="--call-timeout", fix="give a number of seconds")
    return NodeOptions(
        **release_options(args),
        wiping_delay=args.wiping_delay,
        call_timeout=args.call_timeout,
        kubelet_timing=args.kubelet_timing,
        plugin_map=PluginMap(args.plugin_map),
        legacy_services=args.legacy_services,
        node_shape=node_shape(args),
    )


def node_shape(args: argparse.Namespace) -> NodeShape:
    """The Node's resources, labels and taints from the flags, checked."""
    for flag, value in (("--node-cpu", args.node_cpu), ("--node-memory", args.node_memory)):
        try:
            parse_quantity(value)
        except ValueError:
            raise UsageError(f"{value!r} is not a quantity", where=flag, fix="e.g. 8, 500m, 32Gi") from None
    if not args.node_pods.isdigit():
        raise UsageError(f"{args.node_pods!r} is not a number of pods", where="--node-pods", fix="e.g. 110")
    labels = {}
    for label in args.node_label:
        key, equals, value = label.partition("=")
        if not equals or not key:
            raise UsageError(f"{label!r} is not KEY=VALUE", where="--node-label", fix="e.g. --node-label zone=lab")
        if not kubelet_label(key):
            raise UsageError(
                f"a kubelet may not set the label {key!r} on its Node (NodeRestriction refuses it, and the kubelet"
                " refuses the flag)",
                where="--node-label",
                fix=f"use a label outside kubernetes.io and k8s.io, below {' or '.join(KUBELET_LABEL_DOMAINS)}, or one"
                f" of {', '.join(KUBELET_LABELS)}; set others with kubectl label node",
            )
        labels[key] = value
    taints = []
    for taint in args.node_taint:
        pair, colon, effect = taint.rpartition(":")
        key, _, value = pair.partition("=")
        if not colon or not key or effect not in TAINT_EFFECTS:
            raise UsageError(
                f"{taint!r} is not KEY[=VALUE]:EFFECT",
                where="--node-taint",
                fix=f"e.g. --node-taint gpu=true:NoSchedule; EFFECT is one of {', '.join(TAINT_EFFECTS)}",
            )
        taints.append({"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect})
    return NodeShape(args.node_cpu, args.node_memory, args.node_pods, labels, tuple(taints))


def kubelet_label(key: str) -> bool:
    """Whether a kubelet may label its own Node ``key``: labels in the kubernetes.io and k8s.io domains only
    from the kubelet's allowed set, as the kubelet's flag check and NodeRestriction decide."""
    domain = key.rpartition("/")[0]
    if not any(domain == reserved or domain.endswith("." + reserved) for reserved in ("kubernetes.io", "k8s.io")):
        return True
    return key in KUBELET_LABELS or any(
        domain == allowed or domain.endswith("." + allowed) for allowed in KUBELET_LABEL_DOMAINS
    )


@contextlib.asynccontextmanager
async def api_server(args: argparse.Namespace, *, own_process: bool = False) -> AsyncIterator[str]:
    """The kubeconfig to use: the user's, one of the pod's service account, or one written for a freshly
    started embedded API server (``own_process``: in a child process, with a core of its own)."""
    if args.kubeconfig and args.in_cluster:
        raise UsageError("--kubeconfig and --in-cluster both name the API server", where="--in-cluster", fix="give one")
    if args.kubeconfig:
        yield args.kubeconfig
        return
    if args.in_cluster:
        path = Path(args.kubeconfig_out).absolute()
        path.write_text(in_cluster_kubeconfig(args.in_cluster))
        get_logger("apiserver").info(
            "Using the pod's service account", serviceAccount=args.in_cluster, kubeconfig=str(path)
        )
        yield str(path)
        return
    if own_process:
        async with ServerProcess(Path(args.kubeconfig_out), listen=args.listen, verbosity=args.verbosity) as child:
            yield str(child.kubeconfig)
        return
    from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer  # here: a given API server needs none of it

    async with EmbeddedAPIServer(listen=args.listen) as server:
        path = server.kubeconfig(Path(args.kubeconfig_out).absolute())
        get_logger("apiserver").info("Embedded API server ready", url=server.url, kubeconfig=str(path))
        yield str(path)
