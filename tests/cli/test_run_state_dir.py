"""``kubelet-dra run`` never adopts DRA state it did not write, and keeps every node's dirs below its root.

A node adopts the checkpoint of its state dir: it unprepares through the drivers every claim no pod of its own
needs and rewrites the file without it. Pointed at a real kubelet's root dir, that would take the real pods'
devices away. So ``run`` refuses a checkpoint without the marker it writes beside its own, a kubelet's default
dirs without an explicit ``--state-dir``, and a state dir another node holds; and a node name that is not a
Kubernetes node name (``..``, an absolute path) is refused before it becomes a dir.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import KubeletDRAProcess, kubelet_dra

from kubelet_dra.workbench.testbed.statedir import LOCK, MARKER

KUBELET_CHECKPOINT = Path(__file__).parents[1] / "fixtures" / "kubelet-1.36" / "dra_manager_state.one-claim-two-devices"
"""A real kubelet 1.36's checkpoint with one prepared claim."""
REFUSED_WITHIN = 60.0
"""A refusal comes before anything starts; a run that is not refused runs until stopped."""


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("explicit", [False, True], ids=["registry-dir-parent", "state-dir"])
async def test_run_refuses_a_checkpoint_it_did_not_write_and_leaves_it_as_it_was(
    short_dir: Path, explicit: bool
) -> None:
    root = short_dir / "kubelet"
    root.mkdir()
    checkpoint = root / "dra_manager_state"
    shutil.copyfile(KUBELET_CHECKPOINT, checkpoint)
    before = checkpoint.read_bytes()
    state = ("--state-dir", str(root)) if explicit else ()
    code, _, err = await kubelet_dra(
        "run", "--node-name", "node-1", "--registry-dir", str(root / "plugins_registry"), *state, timeout=REFUSED_WITHIN
    )
    assert code == 2, err
    line = one_line(err)
    assert f"{checkpoint} was not written by kubelet-dra" in line
    assert ("--state-dir:" if explicit else "--registry-dir:") in line and "pass an explicit --state-dir" in line
    assert checkpoint.read_bytes() == before
    assert sorted(path.name for path in root.iterdir()) == ["dra_manager_state"], "nothing written beside it"


async def test_run_refuses_a_kubelets_registry_dir_without_a_state_dir() -> None:
    """Checked on the path alone: nothing under /var/lib/kubelet is read or made."""
    code, _, err = await kubelet_dra(
        "run", "--node-name", "node-1", "--registry-dir", "/var/lib/kubelet/plugins_registry", timeout=REFUSED_WITHIN
    )
    assert code == 2, err
    line = one_line(err)
    assert "--registry-dir: the registry dir /var/lib/kubelet/plugins_registry is a kubelet's" in line
    assert "pass an explicit --state-dir" in line


async def test_a_state_dir_is_one_nodes_at_a_time_and_its_own_again_after_a_stop(short_dir: Path) -> None:
    state = short_dir / "state"

    def run(node: str) -> tuple[str, ...]:
        return (
            *("run", "--node-name", node, "--registry-dir", str(short_dir / node), "--state-dir", str(state)),
            *("--kubeconfig-out", str(short_dir / f"{node}.kubeconfig")),
        )

    first = await KubeletDRAProcess.start(*run("node-1"))
    try:
        await first.wait_line("Plugin Watcher Start", timeout=60)
        assert (state / MARKER).is_file() and (state / LOCK).is_file()
        code, _, err = await kubelet_dra(*run("node-2"), timeout=REFUSED_WITHIN)
        assert code == 2, err
        assert f"--state-dir: the state dir {state} is in use by another kubelet-dra node or tool" in one_line(err)
    finally:
        assert await first.stop() == 0, first.lines
    again = await KubeletDRAProcess.start(*run("node-1"))  # its own checkpoint, marked: adopted
    try:
        await again.wait_line("Plugin Watcher Start", timeout=60)
    finally:
        assert await again.stop() == 0, again.lines


@pytest.mark.parametrize("name", ["../outside", "/tmp/kd-absolute-node", "a/b", ".", "Node_1"])
async def test_a_node_name_that_is_not_a_kubernetes_node_name_is_refused(short_dir: Path, name: str) -> None:
    root = short_dir / "nodes"
    code, _, err = await kubelet_dra("run", "--node-name", name, "--root-dir", str(root), timeout=REFUSED_WITHIN)
    assert code == 2, err
    assert f"--node-name: {name!r} cannot be a node name" in one_line(err)
    assert not (short_dir / "outside").exists() and not Path("/tmp/kd-absolute-node").exists()
    assert not root.exists(), "refused before any dir is made"


async def test_a_node_of_many_whose_dir_holds_a_checkpoint_it_did_not_write_is_refused(short_dir: Path) -> None:
    root = short_dir / "nodes"
    (root / "sim-1").mkdir(parents=True)
    checkpoint = root / "sim-1" / "dra_manager_state"
    shutil.copyfile(KUBELET_CHECKPOINT, checkpoint)
    code, _, err = await kubelet_dra(
        *("run", "--nodes", "sim-{0..2}", "--root-dir", str(root), "--kubeconfig-out", str(short_dir / "kc")),
        timeout=REFUSED_WITHIN,
    )
    assert code == 2, err
    line = one_line(err)
    assert f"--root-dir: {checkpoint} was not written by kubelet-dra" in line and "give a --root-dir" in line
    assert checkpoint.read_bytes() == KUBELET_CHECKPOINT.read_bytes()
    assert sorted(path.name for path in root.iterdir()) == ["sim-1"], "no node's dir made, none left locked"
