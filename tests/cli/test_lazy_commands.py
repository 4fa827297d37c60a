"""A subcommand loads only its own module: a driver process does not pay for the API server and the suites."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kubelet_dra.cli import SUBCOMMANDS, chosen_command


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


def test_the_listing_of_every_command_imports_none_of_their_modules():
    """--help, no command, an unknown one: every command is listed with its help, and no command module loads."""
    probe = (
        "import contextlib, io, json, sys; from kubelet_dra.cli import main\n"
        "shown = []\n"
        "for argv in (['--help'], [], ['bogus']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:\n"
        "        with contextlib.suppress(SystemExit): main(argv)\n"
        "    shown.append(' '.join((out.getvalue() + err.getvalue()).split()))\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('kubelet_dra.cli.'))\n"
        "print(json.dumps([shown, loaded]))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    (help_text, bare, unknown), loaded = json.loads(result.stdout)
    assert loaded == ["kubelet_dra.cli.command"]
    for name, help_line in SUBCOMMANDS.items():
        assert f"{name} {' '.join(help_line.split()[:3])}" in help_text, name
    assert "usage: kubelet-dra" in bare
    assert "invalid choice: 'bogus'" in unknown and "conformance" in unknown


@pytest.mark.parametrize(
    ("probe", "absent"),
    [
        # the driver's control commands (fault, health, status) and its --help: no API client, no rich
        ("from kubelet_dra.cli import load_commands; load_commands(['driver'])", ("kubernetes", "rich")),
        # run against an API server it is given (--kubeconfig, --in-cluster): the embedded server's code stays out
        ("from kubelet_dra.cli import load_commands; load_commands(['run'])", ("kubelet_dra.peers.apiserver.server",)),
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
