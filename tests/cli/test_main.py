"""The command-line frame as a user meets it: real processes, real exit codes (``python -m kubelet_dra`` once;
the other command lines share one process, as they differ only in their flags)."""

import subprocess
import sys

import pytest
from helpers import kubelet_dra_each

from kubelet_dra import __version__
from kubelet_dra.cli import SUBCOMMANDS

VERSION = ("--version",)
HELP = ("--help",)
UNKNOWN_FLAG = ("--no-such-flag",)
FLAGS_AFTER = ("services", "--output", "json", "-v", "2")


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, ...], tuple[int, str, str]]:
    return kubelet_dra_each(VERSION, HELP, UNKNOWN_FLAG, FLAGS_AFTER)


def test_version(runs):
    code, out, _ = runs[VERSION]
    assert code == 0
    assert out.strip() == f"kubelet-dra {__version__} (emulates kubelet v1.37.0; also v1.36.2)"


def test_help_lists_every_subcommand(runs):
    code, out, _ = runs[HELP]
    assert code == 0
    for name in SUBCOMMANDS:
        assert name in out
    assert "--verbosity" in out and "--output" in out


def test_no_subcommand_prints_help_and_fails():
    result = subprocess.run(
        [sys.executable, "-m", "kubelet_dra"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "usage: kubelet-dra" in result.stdout


def test_unknown_flag_is_a_usage_error_without_traceback(runs):
    code, _, err = runs[UNKNOWN_FLAG]
    assert code == 2
    assert "Traceback" not in err
    assert "unrecognized arguments: --no-such-flag" in err


def test_global_flags_work_after_the_subcommand(runs):
    code, out, err = runs[FLAGS_AFTER]
    assert code == 0, err
    assert out.lstrip().startswith(("[", "{"))
