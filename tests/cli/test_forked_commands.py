"""The tests' forked ``kubelet-dra`` commands (``tests/forkedcli.py``) answer as exec'd ones do."""

from __future__ import annotations

import pytest
from forkedcli import ForkedCommand, start

from kubelet_dra.workbench.testbed.forked import AVAILABLE, ENABLE

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="this platform has no pidfds: every command is exec'd")

CASES = [
    ("--version",),
    ("explain", "failed to prepare dynamic resources"),
    ("--output", "json", "explain", "failed to prepare dynamic resources"),
    ("checkpoint", "show", "/nonexistent/dra_manager_state"),
    ("replay", "--no-such-flag"),
    ("services",),
]


@pytest.mark.parametrize("args", CASES, ids=lambda args: " ".join(args))
async def test_a_forked_command_prints_and_exits_as_an_execd_one(args: tuple[str, ...]):
    forked = await start(*args, env={ENABLE: "1"}, stdin=True)
    execd = await start(*args, env={ENABLE: ""}, stdin=True)
    assert isinstance(forked, ForkedCommand) and not isinstance(execd, ForkedCommand)
    (forked_out, forked_err), (execd_out, execd_err) = [await p.communicate() for p in (forked, execd)]
    assert (forked.returncode, forked_out.decode(), forked_err.decode()) == (
        execd.returncode,
        execd_out.decode(),
        execd_err.decode(),
    )
    assert forked_out or forked_err, "the comparison saw output"
