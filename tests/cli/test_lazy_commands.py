"""A subcommand loads only its own module: a driver process does not pay for the API server and the suites."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kubelet_dra.cli import SUBCOMMANDS, chosen_command, load_commands


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["driver", "--devices", "2"], "driver"),
        (["-v", "4", "run", "--node-name", "n"], "run"),
        (["--output", "json", "checkpoint", "show", "f"], "checkpoint"),
        (["--verbosity", "2"], None),
        (["--help"], None),
    ],
)
def test_chosen_command_skips_global_flags_and_their_values(argv, expected):
    assert chosen_command(argv) == expected


def test_unknown_or_missing_command_loads_all_for_the_listing():
    assert [command.name for command in load_commands(["bogus"])] == list(SUBCOMMANDS)
    assert [command.name for command in load_commands([])] == list(SUBCOMMANDS)


def test_the_driver_command_does_not_import_the_api_server_or_the_node():
    heavy = ("kubelet_dra.peers.apiserver.server", "kubelet_dra.kubelet.kubelet", "kubelet_dra.workbench.demo")
    probe = (
        "import sys; from kubelet_dra.cli import load_commands; load_commands(['-v', '2', 'driver']); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("probe", "absent"),
    [
        # the driver's control commands (fault, health, status) and its --help: no API client, no rich
        ("from kubelet_dra.cli import load_commands; load_commands(['driver'])", ("kubernetes", "rich")),
        # the driver placeholders and the object helpers, without the node, the API server and the control plane
        (
            "from kubelet_dra.workbench.testbed import PLACEHOLDERS, manifests",
            ("kubelet_dra.workbench.testbed.bed", "kubelet_dra.peers.apiserver.server", "kubelet_dra.kubelet.kubelet"),
        ),
    ],
)
def test_what_a_process_does_not_use_it_does_not_import(probe: str, absent: tuple[str, ...]):
    code = f"import sys; {probe}; print(sorted(m for m in {absent!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
