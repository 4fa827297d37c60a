"""``kubelet-dra run --nodes``: many simulated nodes in one process, each with its own driver.

One process runs the embedded API server and three nodes; one reference driver process serves all
three, each node with its own sockets, slices, CDI dir and fault knobs. The offline control plane
(its own process) generates and allocates a claim for one pod per node; each node prepares its pod's
claim through its own driver, reports it Running, and unprepares it on deletion. The tally line and
the final table say so.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from helpers import eventually, kubelet_dra

from kubelet_dra.peers.driver import control
from kubelet_dra.peers.driver.settings import CONTROL_SOCKET
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed import manifests, objects
from kubelet_dra.workbench.testbed.forked import ENABLE as FORK_DRIVERS

DRIVER = "gpu.example.com"
NODES = ("sim-0", "sim-1", "sim-2")
CLAIM_SPECS = "*device_[0-9a-f]*-*.json"
"""The reference driver's CDI spec files of one claim (the driver's common spec stays)."""


class Fleet:
    """The ``run --nodes`` process; its stdout and stderr are read all along (the pipes never fill)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            asyncio.create_task(self._read(proc.stdout, self.out)),
            asyncio.create_task(self._read(proc.stderr, self.err)),
        ]

    @staticmethod
    async def _read(stream: asyncio.StreamReader | None, lines: list[str]) -> None:
        assert stream is not None
        async for raw in stream:
            lines.append(raw.decode().rstrip("\n"))

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.out)

    async def stop(self) -> int:
        """SIGTERM; the exit code."""
        self.proc.terminate()
        code = await asyncio.wait_for(self.proc.wait(), 60)
        await asyncio.gather(*self._readers)
        return code


@pytest.fixture
async def fleet(short_dir: Path) -> AsyncIterator[tuple[Fleet, KubeClient]]:
    kubeconfig = short_dir / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubelet_dra", "run", "--nodes", "sim-{0..2}", "--root-dir", str(short_dir / "nodes")),
        *(
            "--reference-driver",
            DRIVER,
            "--kubeconfig-out",
            str(kubeconfig),
            "--pod-back-off-period",
            "0.2",
            "--sync-frequency",
            "0.2",
        ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={name: value for name, value in os.environ.items() if name != FORK_DRIVERS},  # its own command line in ps
    )
    running = Fleet(proc)
    controlplane: asyncio.subprocess.Process | None = None
    kube: KubeClient | None = None
    try:
        assert await eventually(lambda: running.saw("3 nodes, 3 with a driver registered"), timeout=60), running.out
        controlplane = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "controlplane", "--kubeconfig", str(kubeconfig)),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        kube = KubeClient.from_kubeconfig(str(kubeconfig))
        yield running, kube
    finally:
        if controlplane is not None:
            controlplane.terminate()
            await controlplane.wait()
        if kube is not None:
            kube.close()
        if running.proc.returncode is None:
            await running.stop()


def child_processes(pid: int, command: str) -> dict[int, str]:
    """The ``kubelet-dra COMMAND`` processes ``pid`` started: pid → command line."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            words = Path(f"/proc/{child}/cmdline").read_text().split("\0")
            if command in words:
                found[int(child)] = " ".join(words)
    return found


async def test_each_node_prepares_its_pod_through_its_own_driver(
    fleet: tuple[Fleet, KubeClient], short_dir: Path
) -> None:
    running, kube = fleet
    [command] = child_processes(running.proc.pid, "driver").values()
    assert "--nodes sim-0,sim-1,sim-2" in command, command
    [apiserver] = child_processes(running.proc.pid, "apiserver")  # many nodes: the API server has its own process
    sockets = {node: short_dir / "nodes" / node / "plugins" / "gpu" / CONTROL_SOCKET for node in NODES}
    knobs = await control.request(sockets["sim-1"], {"op": "set", "knobs": {"notify-error": "boom"}})
    assert knobs["knobs"] == {"notify-error": "boom"}
    for node in ("sim-0", "sim-2"):  # each node's knobs are its own
        assert (await control.request(sockets[node], {"op": "get"}))["knobs"] == {}
    status = (await control.request(sockets["sim-2"], {"op": "status"}))["status"]
    assert status["node"] == "sim-2" and status["registration"]["registered"], status
    await control.request(sockets["sim-1"], {"op": "clear", "knobs": []})
    await objects.apply(kube, manifests.device_class(DRIVER))
    await objects.apply(kube, manifests.claim_template("one-gpu", DRIVER))
    for node in NODES:
        await objects.apply(kube, manifests.pod(f"pod-{node}", node, templates={"gpu": "one-gpu"}))

    async def all_running() -> bool:
        pods = await objects.list_objects(kube, "Pod", objects.DEFAULT_NAMESPACE)
        phases = {pod["spec"]["nodeName"]: (pod.get("status") or {}).get("phase") for pod in pods}
        return set(phases) == set(NODES) and set(phases.values()) == {"Running"}

    assert await eventually(all_running, timeout=60), running.out
    assert await eventually(lambda: running.saw("3 pods running, 3 claims prepared"), timeout=10), running.out
    for node in NODES:
        claims = await objects.list_objects(kube, "ResourceClaim", objects.DEFAULT_NAMESPACE)
        pools = {
            result["pool"]
            for claim in claims
            if claim["metadata"]["name"].startswith(f"pod-{node}-")
            for result in claim["status"]["allocation"]["devices"]["results"]
        }
        assert pools == {node}, "each claim is allocated from its own node's devices"
        specs = list((short_dir / "nodes" / node / "cdi").glob(CLAIM_SPECS))
        assert specs, f"{node}'s own driver wrote no CDI spec for the claim"
        node_object = await objects.get(kube, "Node", node)
        assert node_object is not None
        ready = [c for c in node_object["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"

    for node in NODES:
        await objects.delete(kube, "Pod", f"pod-{node}", objects.DEFAULT_NAMESPACE)

    async def gone() -> bool:
        return not await objects.list_objects(kube, "Pod", objects.DEFAULT_NAMESPACE)

    assert await eventually(gone, timeout=60), running.out
    assert await eventually(lambda: running.saw("0 pods running, 0 claims prepared"), timeout=10), running.out
    for node in NODES:
        assert not list((short_dir / "nodes" / node / "cdi").glob(CLAIM_SPECS)), f"{node} left a CDI spec behind"

    assert await running.stop() == 0
    assert not Path(f"/proc/{apiserver}").exists(), "the API server process outlived run"
    assert not any("Traceback" in line for line in running.err), running.err
    table = "\n".join(running.out)
    for node in NODES:
        assert f"│ {node} │ {DRIVER}" in table, table


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--nodes", "sim-{0.."), "unbalanced '{'"),
        (("--nodes", "sim-{0..1},sim-1"), "node sim-1 is named twice"),
        (("--nodes", "sim-0,Sim_1"), "--nodes: 'Sim_1' cannot be a node name"),
        (("--nodes", "sim-{x}"), "{x} is neither a range nor a list"),
        (("--nodes", "a,b", "--registry-dir", "/tmp"), "--registry-dir belongs to one node"),
        (("--nodes", "a,b", "--driver-cmd", "driver {nodes}"), "unknown placeholder {nodes}"),
        (("--node-name", "a", "--driver-cmd", "driver }"), "Single '}' encountered"),
        (("--node-name", "a", "--driver-cmd", "driver {node:d}"), "placeholder {node:d} takes no conversion or format"),
        (("--node-name", "a", "--driver-cmd", "driver {node!r}"), "placeholder {node!r} takes no conversion"),
        (("--node-name", "a", "--driver-cmd", "driver --x \udcff"), "--driver-cmd: the driver command is not UTF-8"),
        (("--node-name", "a", "--driver-name", "x.example.com"), "--driver-name without a driver to start"),
        (("--nodes", "a,b", "--devices", "2"), "--devices is the reference driver's"),
        (("--nodes", "a,b", "--reference-driver", "g.example.com", "--devices", "-1"), "cannot have -1 devices"),
        (("--nodes", "a,b", "--shard", "2/2"), "--shard: shard 2 of 2 does not exist"),
        (("--node-name", "a", "--shard", "0/2"), "--shard splits the names of --nodes"),
        (("--nodes", "a,b", "--kubeconfig", "k", "--apiserver-process"), "--apiserver-process starts the embedded"),
    ],
)
async def test_bad_node_flags_are_usage_errors(flags: tuple[str, ...], message: str) -> None:
    code, _, err = await kubelet_dra("run", *flags)
    assert code == 2
    assert message in err, err
    assert "Traceback" not in err


async def test_a_node_that_cannot_start_stops_the_ones_started_beside_it(short_dir: Path) -> None:
    """The nodes start together: one whose kubeconfig is missing ends the run with one line naming the file,
    after the nodes that did start are stopped."""
    for node in ("sim-0", "sim-2"):  # sim-1 has none; the API server is away, which a kubelet survives
        (short_dir / f"kubeconfig-node-{node}").write_text(
            'apiVersion: v1\nkind: Config\nclusters: [{name: t, cluster: {server: "https://127.0.0.1:1"}}]\n'
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: t, context: {cluster: t, user: u}}]\n"
            "current-context: t\n"
        )
    code, _, err = await kubelet_dra(
        *("run", "--nodes", "sim-{0..2}", "--root-dir", str(short_dir / "nodes")),
        *("--kubeconfig", str(short_dir / "kubeconfig-node-{node}"), "--reference-driver", DRIVER),
    )
    assert code == 2, err
    assert f"{short_dir / 'kubeconfig-node-sim-1'}: kubeconfig file does not exist" in err
    assert all(f'msg="Stopped simulated node" node={node}' in err for node in ("sim-0", "sim-2")), err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "names"),
    [(("--nodes", "a,b"), ["a", "b"]), (("--nodes", "n{0..5}", "--shard", "1/3"), ["n2", "n3"])],
)
async def test_the_final_table_is_json_with_output_json(
    short_dir: Path, flags: tuple[str, ...], names: list[str]
) -> None:
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubelet_dra", "--output", "json", "run", *flags),
        *("--root-dir", str(short_dir / "nodes"), "--kubeconfig-out", str(short_dir / "kubeconfig")),
        "--no-apiserver-process",  # the table is what this checks: the server inside saves a process start
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await eventually(lambda: (short_dir / "nodes" / names[-1] / "plugins_registry").is_dir(), timeout=30)
    proc.terminate()
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    rows = json.loads(out)
    assert [row["name"] for row in rows] == names
    assert all(row["drivers"] == [] and row["last_error"] == "" for row in rows)
