"""The command-line frame as a user meets it: a real subprocess, real exit codes."""

import subprocess
import sys

from kubelet_dra import __version__
from kubelet_dra.cli import SUBCOMMANDS


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"kubelet-dra {__version__} (emulates kubelet v1.37.0; also v1.36.2)"


def test_help_lists_every_subcommand():
    result = run_cli("--help")
    assert result.returncode == 0
    for name in SUBCOMMANDS:
        assert name in result.stdout
    assert "--verbosity" in result.stdout and "--output" in result.stdout


def test_no_subcommand_prints_help_and_fails():
    result = run_cli()
    assert result.returncode == 2
    assert "usage: kubelet-dra" in result.stdout


def test_unknown_flag_is_a_usage_error_without_traceback():
    result = run_cli("--no-such-flag")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "unrecognized arguments: --no-such-flag" in result.stderr


def test_global_flags_work_after_the_subcommand():
    result = run_cli("services", "--output", "json", "-v", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.lstrip().startswith(("[", "{"))
