"""``kubelet-dra apiserver``: run the embedded Kubernetes API server on its own.

Point kubectl or a real Go DRA driver at it through the kubeconfig it writes; objects survive
restarts with ``--data-dir``. With ``--node-restricted`` every ``--node`` gets its own
kubeconfig whose identity may only write that node's ResourceSlices, as in a real cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command
from kubelet_dra.peers.errors import UsageError

DEFAULT_LISTEN = "127.0.0.1:6443"
DEFAULT_KUBECONFIG = "kubelet-dra.kubeconfig"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN}; port 0 picks a free port)",
    )
    parser.add_argument(
        "--kubeconfig-out",
        metavar="FILE",
        help=f"admin kubeconfig to write (default: DIR/admin.kubeconfig with --data-dir, else ./{DEFAULT_KUBECONFIG})",
    )
    parser.add_argument(
        "--data-dir", metavar="DIR", help="keep objects, CA and tokens here across restarts (default: in memory)"
    )
    parser.add_argument(
        "--node-restricted",
        action="store_true",
        help="node identities may write only their own node's ResourceSlices (like a real cluster)",
    )
    parser.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="NAME",
        help="write a kubeconfig for node NAME's identity (repeatable; needs --node-restricted)",
    )
    parser.add_argument("--insecure-http", action="store_true", help="serve plain HTTP instead of HTTPS")
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow --listen on a non-loopback address (reachable by others)"
    )


def kubeconfig_paths(args: argparse.Namespace) -> tuple[Path, dict[str, Path]]:
    """The admin kubeconfig path and one per ``--node``, beside it."""
    if args.kubeconfig_out:
        admin = Path(args.kubeconfig_out)
    elif args.data_dir:
        admin = Path(args.data_dir) / "admin.kubeconfig"
    else:
        admin = Path(DEFAULT_KUBECONFIG)
    admin = admin.absolute()
    stem = admin.name.removesuffix(".kubeconfig")
    nodes = {node: admin.with_name(f"{stem}.node-{node}.kubeconfig") for node in args.node}
    return admin, nodes


def check_flags(args: argparse.Namespace) -> None:
    from kubelet_dra.peers.apiserver.fielderrors import dns1123_subdomain_errors  # here, as the server below
    from kubelet_dra.peers.apiserver.server import ListenAddress  # here: `run` shares the constants, not the server

    ListenAddress.parse(args.listen, allow_remote=args.allow_remote)
    if args.node and not args.node_restricted:
        raise UsageError(
            "--node writes node-identity kubeconfigs, which only mean something in node-restricted mode",
            where="--node",
            fix="add --node-restricted, or drop --node",
        )
    for node in args.node:
        if problems := dns1123_subdomain_errors(node):
            raise UsageError(
                f"{node!r} is not a node name: {problems[0]}",
                where="--node",
                fix="name the node as Kubernetes names nodes (it names the node's kubeconfig file too)",
            )
    if args.data_dir and Path(args.data_dir).exists() and not Path(args.data_dir).is_dir():
        raise UsageError(f"{args.data_dir} is not a directory", where="--data-dir", fix="give a directory path")


def run(args: argparse.Namespace) -> int:
    check_flags(args)
    asyncio.run(serve(args))
    return 0


async def serve(args: argparse.Namespace) -> None:
    from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer  # here: `run` shares the constants, not the server

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    admin_path, node_paths = kubeconfig_paths(args)
    async with EmbeddedAPIServer(
        listen=args.listen,
        data_dir=args.data_dir,
        node_restricted=args.node_restricted,
        tls=not args.insecure_http,
        allow_remote=args.allow_remote,
    ) as server:
        server.kubeconfig(admin_path)
        for node, path in node_paths.items():
            server.node_kubeconfig(node, path)
        announce(args, server.url, admin_path, node_paths)
        await stop.wait()
    if args.output != "json":
        output.console().print("API server stopped.")


def announce(args: argparse.Namespace, url: str, admin_path: Path, node_paths: dict[str, Path]) -> None:
    if args.output == "json":
        output.print_json(
            {
                "url": url,
                "kubeconfig": str(admin_path),
                "node_kubeconfigs": {node: str(path) for node, path in node_paths.items()},
                "data_dir": str(Path(args.data_dir).absolute()) if args.data_dir else None,
                "node_restricted": args.node_restricted,
            }
        )
        return
    console = output.console()
    console.print(f"[bold]kubelet-dra API server[/bold] listening on {url}")
    console.print(f"  admin kubeconfig: {admin_path}")
    for node, path in node_paths.items():
        console.print(f"  kubeconfig for node {node} (system:node:{node}): {path}")
    storage = f"data dir {Path(args.data_dir).absolute()}" if args.data_dir else "in memory (lost on exit)"
    console.print(f"  objects: {storage}")
    console.print("Use it:", markup=False)
    console.print(f"  export KUBECONFIG={admin_path}", markup=False, soft_wrap=True)
    console.print("  kubectl get resourceslices", markup=False)
    console.print(f"  Go DRA driver: --kubeconfig={admin_path} (or the KUBECONFIG variable)", markup=False)
    console.print("Press Ctrl-C to stop.", markup=False)


COMMAND = Command(
    name="apiserver",
    description=(
        "Serve a Kubernetes API (core/v1 and resource.k8s.io v1, v1beta2, v1beta1, and the Leases, CSINodes,"
        " CSIDrivers and RuntimeClasses a kubelet uses) over HTTPS on loopback, write a kubeconfig for it, and"
        " run until Ctrl-C. kubectl, client-go drivers, the real kubelet and the Python client use it unchanged."
    ),
    add_arguments=add_arguments,
    run=run,
)
