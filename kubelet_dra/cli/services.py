"""``kubelet-dra services``: the gRPC services the kubelet speaks, advertised identifier beside wire name.

Driver authors read it to avoid the commonest DRA mistake (docs/protocol.md#grpc-api): the identifier listed in
``PluginInfo.supported_versions`` is not the service name the kubelet calls on the wire.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command
from kubelet_dra.peers.api.services import ALL_SERVICES, DRA_SERVICES, Service

NOTES = (
    "The advertised identifier goes in PluginInfo.supported_versions; the kubelet calls the wire service."
    " For v1 and v1beta1 they differ: a server whose .proto says `package v1;` answers every call with UNIMPLEMENTED.",
    "A 1.36 kubelet uses the first identifier in the plugin's list that it accepts ("
    + ", ".join(service.advertised for service in DRA_SERVICES)
    + ") and rejects the plugin if there is none; legacy services need a ≤1.32 kubelet.",
)


def describe(service: Service) -> dict[str, Any]:
    """One service as the JSON output shows it."""
    return {
        "role": service.role,
        "advertised": service.advertised or None,
        "also_advertised_as": list(service.also_advertised_as),
        "wire_service": service.wire_name,
        "methods": list(service.method_paths),
        "legacy": service.legacy,
        "kubelets": service.kubelets,
    }


def table(services: tuple[Service, ...]) -> Table:
    """Advertised identifier beside the wire service and its method paths, one row per service."""
    result = Table(title="gRPC services between the kubelet and DRA drivers", show_lines=True)
    result.add_column("Advertised (supported_versions)", overflow="fold", max_width=28)
    result.add_column("Wire service and method paths", overflow="fold")
    result.add_column("Kubelets", overflow="fold", max_width=20)
    result.add_column("Legacy")
    for service in services:
        advertised = "\nor ".join((service.advertised or "(not advertised)", *service.also_advertised_as))
        result.add_row(
            f"{advertised}\n[dim]{service.role}[/dim]",
            "\n".join((f"[bold]{service.wire_name}[/bold]", *service.method_paths)),
            service.kubelets,
            "yes" if service.legacy else "no",
        )
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The listing has no flags of its own; ``--output json`` selects the machine format."""


def run(args: argparse.Namespace) -> int:
    if args.output == "json":
        output.print_json([describe(service) for service in ALL_SERVICES])
        return 0
    console = output.console()
    console.print(table(ALL_SERVICES))
    for note in NOTES:
        console.print(f"- {note}", markup=False)
    return 0


COMMAND = Command(
    name="services",
    description=(
        "List every gRPC service kubelet-dra speaks: the identifier a driver advertises, the wire service"
        " the kubelet actually calls, its full method paths, whether it is legacy and which kubelets use it."
    ),
    add_arguments=add_arguments,
    run=run,
)
