"""The flags of a simulated node that ``run`` and ``debug`` share: which API server, and how the kubelet behaves.

Without ``--kubeconfig`` the embedded API server is started and its admin kubeconfig written to
``--kubeconfig-out`` for drivers; the kubelet flags default to v1.36's behaviour.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from kubelet_dra.apiserver.server import EmbeddedAPIServer
from kubelet_dra.cli.apiserver import DEFAULT_KUBECONFIG
from kubelet_dra.errors import UsageError
from kubelet_dra.log import get_logger
from kubelet_dra.node import NodeOptions
from kubelet_dra.plugins import DEFAULT_CALL_TIMEOUT, DEFAULT_WIPING_DELAY, PluginMap


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="use this cluster's API server (default: start the embedded one)",
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


def node_options(args: argparse.Namespace) -> NodeOptions:
    """The node's behaviour from the shared flags, checked."""
    if args.wiping_delay < 0:
        raise UsageError("the wiping delay cannot be negative", where="--wiping-delay", fix="give 0 or more seconds")
    if args.call_timeout <= 0:
        raise UsageError("the call timeout must be positive", where="--call-timeout", fix="give a number of seconds")
    return NodeOptions(
        wiping_delay=args.wiping_delay,
        call_timeout=args.call_timeout,
        kubelet_timing=args.kubelet_timing,
        plugin_map=PluginMap(args.plugin_map),
        legacy_services=args.legacy_services,
    )


@contextlib.asynccontextmanager
async def api_server(args: argparse.Namespace) -> AsyncIterator[str]:
    """The kubeconfig to use: the user's, or one written for a freshly started embedded API server."""
    if args.kubeconfig:
        yield args.kubeconfig
        return
    async with EmbeddedAPIServer(listen=args.listen) as server:
        path = server.kubeconfig(Path(args.kubeconfig_out).absolute())
        get_logger("apiserver").info("Embedded API server ready", url=server.url, kubeconfig=str(path))
        yield str(path)
