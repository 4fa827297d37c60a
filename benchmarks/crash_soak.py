"""Crash soak: ``kill -9`` of the node and of the driver at random moments of pod churn, then the invariants.

Real processes, as on a node: ``kubelet-dra apiserver``, ``kubelet-dra controlplane`` (claims from
a template, allocation), ``kubelet-dra run`` (the node) and the reference driver ``kubelet-dra
driver`` at ``-v 6``, whose log is the record of every call it handled. Each cycle waits until the
node has the driver registered, then creates and deletes pods for a random while and, at a random
moment of it, kills the node, the driver or both with SIGKILL; while they are down it deletes pods
(gracefully, or with grace period 0 so that only the kubelet's reconcile loop can unprepare them)
and creates more, then starts what it killed again. After the last cycle the node settles and the
invariants of ``soak_verdict`` are checked: every claim of a live pod prepared, no claim prepared
or unprepared twice unless a kill forced the repeat, every deleted pod's claims unprepared, no
leaked CDI spec, a valid checkpoint, no traceback in any log. Exit 1 when one broke.

The seed makes the soak's own choices (which pods, when, which victim) repeatable; the processes'
timing is the machine's.

Run: ``python benchmarks/crash_soak.py [--cycles 100] [--seed 1] [--keep] [--output json] [--results FILE]``;
``--markdown FILE`` prints the table of a results file (``soak_report``) for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
from apiserver_bench import Server
from common import load, print_markdown_and_exit, provenance, write_json, write_results
from rich.console import Console
from soak_report import figures, markdown, report, rows
from soak_verdict import FinalState, Outage, PodRecord, Verdict, driver_calls, judge, tracebacks

from kubelet_dra.kubelet.cm.dra import Checkpoint
from kubelet_dra.peers.driver.cdi import CDI_CLASS, COMMON_DEVICE
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.workbench.testbed import DriverProcess, DriverSpec, manifests, objects, placeholder_values

DRIVER = "gpu.example.com"
NODE = "soak-node"
TEMPLATE = "soak-gpu"
NAMESPACE = objects.DEFAULT_NAMESPACE
NODE_COMMAND = (
    "{python} -m kubelet_dra run --node-name {node} --registry-dir {registry_dir} --kubeconfig {kubeconfig}"
    " --pod-back-off-period 0.5 --sync-frequency 0.5 --reconcile-period 1"
)
CONTROLPLANE_COMMAND = "{python} -m kubelet_dra controlplane --kubeconfig {kubeconfig}"
DEVICES = 32
"""Enough for the live pods and for the claims of deleted pods still waiting to be unprepared."""
DRIVER_ARGS = ("--devices", str(DEVICES), "--republish-delay", "1", "-v", "6")
REGISTERED = "Registered DRA plugin"
VICTIMS = (("node",), ("driver",), ("node", "driver"))
VICTIM_WEIGHTS = (2, 1, 1)
CREATE_SHARE = 0.55
FORCED_SHARE = 0.25
READY_TIMEOUT = 60.0
OBSERVE_PERIOD = 0.2
KUBELET = "1.37 emulated"
"""The release ``kubelet-dra run`` plays by default, which the soak's node runs."""


@attrs.frozen
class SoakOptions:
    cycles: int = 100
    seed: int = 1
    max_pods: int = 8
    """Live pods at most: beyond it the churn deletes a pod (one whose claim was generated) instead."""
    churn: float = 2.0
    """The longest stretch of churn that a cycle's kills fall into, in seconds."""
    settle: float = 120.0
    """How long the node may take at the end to run every live pod and finish every deleted one."""


class Stage:
    """The node's processes: the API server for good, the others started from command templates and killed at will."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.server = Server(workdir, log=workdir / "apiserver.log")
        self.registry_dir = workdir / "node" / "plugins_registry"
        self.registry_dir.mkdir(parents=True)
        self.cdi_root = workdir / "cdi"
        values = placeholder_values(
            node=NODE,
            kubeconfig=self.server.kubeconfig,
            registry_dir=self.registry_dir,
            plugin_dir=workdir / "plugins" / DRIVER,
            plugins_root=workdir / "plugins",
            cdi_root=self.cdi_root,
            driver=DRIVER,
        )
        self.driver = DriverProcess(
            DriverSpec(DRIVER, extra_args=DRIVER_ARGS), values, workdir / "plugins" / DRIVER, workdir / "driver.log"
        )
        # The node and the control plane are processes from a command template too, logged per start.
        self.node = DriverProcess(
            DriverSpec(None, NODE_COMMAND, label="node"), values, self.registry_dir.parent, workdir / "node.log"
        )
        self.controlplane = DriverProcess(
            DriverSpec(None, CONTROLPLANE_COMMAND, label="controlplane"), values, workdir, workdir / "controlplane.log"
        )
        self.kube = KubeClient.from_kubeconfig(str(self.server.kubeconfig))

    @property
    def processes(self) -> dict[str, DriverProcess]:
        return {"node": self.node, "driver": self.driver}

    @property
    def checkpoint_path(self) -> Path:
        """Where ``run`` keeps ``dra_manager_state``: the registry dir's parent, as a kubelet's root dir."""
        return Checkpoint(self.registry_dir.parent).path

    async def start(self) -> None:
        await self.controlplane.start()
        await objects.apply(self.kube, manifests.device_class(DRIVER))
        await objects.apply(self.kube, manifests.claim_template(TEMPLATE, DRIVER))
        await self.restart()

    async def restart(self) -> dict[str, float]:
        """Start whatever is down, and wait until the node has the driver registered again; when each started."""
        since = self.node.log_path.stat().st_size if self.node.log_path.exists() else 0
        started = {}
        for name, process in self.processes.items():
            if not process.running:
                started[name] = time.time()
                await process.start()
        deadline = time.monotonic() + READY_TIMEOUT
        while REGISTERED not in self.node.log_path.read_bytes()[since:].decode(errors="replace"):
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"crash soak: the node did not register the driver within {READY_TIMEOUT:g} s;"
                    f" logs in {self.workdir}"
                )
            await asyncio.sleep(0.05)
        return started

    async def stop(self) -> None:
        for process in (self.node, self.driver, self.controlplane):
            with contextlib.suppress(Exception):
                await process.stop()
        self.kube.close()
        self.server.stop()

    def logs(self) -> list[str]:
        paths = [self.workdir / "apiserver.log", *(p.log_path for p in (self.node, self.driver, self.controlplane))]
        return [path.read_text(errors="replace") for path in paths if path.exists()]


class Churn:
    """Pods created and deleted at random, the kills between, and what the soak saw of each pod."""

    def __init__(self, stage: Stage, options: SoakOptions) -> None:
        self.stage = stage
        self.options = options
        self.rng = random.Random(options.seed)
        self.pods: dict[str, PodRecord] = {}
        self.outages: list[Outage] = []
        self.killed: dict[str, float] = {}
        """Victim → when it was killed, until it is started again."""
        self.kills: Counter[str] = Counter()

    def live(self) -> list[PodRecord]:
        return [pod for pod in self.pods.values() if pod.deleted is None]

    async def create(self) -> None:
        name = f"soak-{len(self.pods):04d}"
        stored = await objects.apply(self.stage.kube, manifests.pod(name, NODE, templates={"gpu": TEMPLATE}))
        self.pods[name] = PodRecord(name, stored["metadata"]["uid"], time.time())

    def deletable(self) -> list[PodRecord]:
        """Live pods whose claim was generated. A scheduler binds a pod only then; a pod bound and deleted before
        would stay Terminating, as on a real kubelet (its unprepare cannot name the claim: kubernetes#139772)."""
        return [pod for pod in self.live() if pod.claimed]

    async def delete(self) -> None:
        pod = self.rng.choice(self.deletable())
        pod.forced = self.rng.random() < FORCED_SHARE
        pod.deleted_while_node_down = not self.stage.node.running
        pod.deleted = time.time()
        await objects.delete(self.stage.kube, "Pod", pod.name, NAMESPACE, grace=0 if pod.forced else None)

    async def act(self, create_share: float = CREATE_SHARE) -> None:
        room = len(self.live()) < self.options.max_pods
        if not self.deletable() or (room and self.rng.random() < create_share):
            await self.create()
        else:
            await self.delete()

    async def kill(self, victim: str) -> None:
        self.killed[victim] = time.time()
        self.kills[victim] += 1
        await self.stage.processes[victim].kill()

    async def cycle(self) -> None:
        """Churn with the kills at random moments of it, more churn while the victims are down, then restart."""
        window = self.rng.uniform(0.1, self.options.churn)
        victims = self.rng.choices(VICTIMS, VICTIM_WEIGHTS)[0]
        moments = [(self.rng.uniform(0, window), "churn") for _ in range(self.rng.randint(1, 3))]
        moments += [(self.rng.uniform(0, window), victim) for victim in victims]
        started = time.monotonic()
        for at, what in sorted(moments):
            await asyncio.sleep(max(0.0, started + at - time.monotonic()))
            await (self.act() if what == "churn" else self.kill(what))
        for _ in range(self.rng.randint(0, 2)):
            await self.act(create_share=1 - CREATE_SHARE)  # mostly deletions while down
        for victim, restarted in (await self.stage.restart()).items():
            self.outages.append(Outage(self.killed.pop(victim), restarted))

    async def observe(self) -> None:
        """Note which pods have their claim generated, and when each is first seen Running (watched, so within
        milliseconds of the node's status write): from then on, preparing its claim again is a bug."""
        path = api_path("", "v1", "pods", namespace=NAMESPACE)
        while True:
            with contextlib.suppress(KubeApiError):
                listed = await self.stage.kube.request("GET", path)
                for pod in listed.get("items") or []:
                    self._seen(pod)
                query = {"resourceVersion": listed["metadata"]["resourceVersion"]}
                async with contextlib.aclosing(self.stage.kube.watch(path, query)) as events:
                    async for event in events:
                        self._seen(event.object)
            await asyncio.sleep(OBSERVE_PERIOD)

    def _seen(self, pod: dict[str, Any]) -> None:
        record = self.pods.get(pod["metadata"]["name"])
        if record is None:
            return
        status = pod.get("status") or {}
        record.claimed = record.claimed or bool(status.get("resourceClaimStatuses"))
        if status.get("phase") == "Running" and record.running_seen is None:
            record.running_seen = time.time()


async def live_claims(kube: KubeClient, churn: Churn) -> dict[str, str]:
    """Claim UID → pod name for the claims generated for the pods never deleted."""
    live = {pod.uid: pod.name for pod in churn.live()}
    found = {}
    for claim in await objects.list_objects(kube, "ResourceClaim", NAMESPACE):
        for owner in claim["metadata"].get("ownerReferences") or []:
            if owner.get("uid") in live:
                found[claim["metadata"]["uid"]] = live[owner["uid"]]
    return found


async def settled(stage: Stage, churn: Churn) -> bool:
    """Every live pod Running with its claim prepared in the driver, and every deleted pod gone."""
    pods = {pod["metadata"]["name"]: pod for pod in await objects.list_objects(stage.kube, "Pod", NAMESPACE)}
    if any(pods.get(pod.name, {}).get("status", {}).get("phase") != "Running" for pod in churn.live()):
        return False
    if any(name in pods for name, pod in churn.pods.items() if pod.deleted is not None):
        return False
    claims = await live_claims(stage.kube, churn)
    return len(claims) == len(churn.live()) and set((await stage.driver.status())["prepared"]) == set(claims)


def cdi_claims(root: Path) -> frozenset[str]:
    """UIDs of the claims with a CDI spec of the driver's (``k8s.<driver>-device_<claim UID>.json``)."""
    prefix = f"k8s.{DRIVER}-{CDI_CLASS}_"
    found = {path.name.removeprefix(prefix).removesuffix(".json") for path in root.glob(f"{prefix}*.json")}
    return frozenset(found - {COMMON_DEVICE})


async def checkpoint(path: Path) -> tuple[bool, dict[str, frozenset[str]]]:
    """Whether ``kubelet-dra checkpoint verify`` finds the file as a kubelet writes it, and its entries."""

    async def cli(*args: str) -> Any:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "checkpoint", *args, str(path), "--output", "json"),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await process.communicate()
        return json.loads(out) if process.returncode == 0 else None

    verified, shown = await cli("verify"), await cli("show")
    valid = bool(verified and verified["valid"] and verified["canonical"])
    return valid, {entry["claim_uid"]: frozenset(entry["pod_uids"]) for entry in shown or []}


async def final_state(stage: Stage, churn: Churn) -> FinalState:
    """Read once the node settled (or gave up settling): then the node stops cleanly, as a kubelet would."""
    pods = await objects.list_objects(stage.kube, "Pod", NAMESPACE)
    claims = await live_claims(stage.kube, churn)
    prepared = frozenset((await stage.driver.status())["prepared"])
    await stage.node.stop()
    valid, entries = await checkpoint(stage.checkpoint_path)
    names = {pod["metadata"]["name"] for pod in pods}
    return FinalState(
        live_claims=claims,
        running=frozenset(pod["metadata"]["name"] for pod in pods if pod.get("status", {}).get("phase") == "Running"),
        pods_left=frozenset(name for name, pod in churn.pods.items() if pod.deleted is not None and name in names),
        driver_prepared=prepared,
        cdi_specs=cdi_claims(stage.cdi_root),
        checkpoint_valid=valid,
        checkpoint=entries,
        tracebacks=tracebacks(stage.logs()),
    )


@attrs.frozen
class SoakRun:
    options: SoakOptions
    kills: dict[str, int]
    pods_created: int
    pods_deleted: int
    deleted_while_node_down: int
    forced: int
    settled: bool
    seconds: float
    verdict: Verdict
    workdir: str


async def soak(options: SoakOptions, workdir: Path) -> SoakRun:
    started = time.monotonic()
    stage = Stage(workdir)
    churn = Churn(stage, options)
    observer = asyncio.create_task(churn.observe())
    try:
        await stage.start()
        for _ in range(options.cycles):
            await churn.cycle()
        deadline = time.monotonic() + options.settle
        while not (done := await settled(stage, churn)) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        final = await final_state(stage, churn)
    finally:
        observer.cancel()
        await stage.stop()
    deleted = [pod for pod in churn.pods.values() if pod.deleted is not None]
    calls = driver_calls(stage.driver.log_path.read_text(errors="replace"))
    timeline = {
        "outages": [attrs.asdict(o) for o in churn.outages],
        "pods": [attrs.asdict(p) for p in churn.pods.values()],
    }
    (workdir / "soak.json").write_text(json.dumps(timeline, indent=2) + "\n")  # beside the logs, for a broken run
    return SoakRun(
        options=options,
        kills=dict(churn.kills),
        pods_created=len(churn.pods),
        pods_deleted=len(deleted),
        deleted_while_node_down=sum(pod.deleted_while_node_down for pod in deleted),
        forced=sum(pod.forced for pod in deleted),
        settled=done,
        seconds=time.monotonic() - started,
        verdict=judge(calls, churn.outages, churn.pods, final),
        workdir=str(workdir),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100, help="kill cycles (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the soak's random choices (default: %(default)s)")
    parser.add_argument("--max-pods", type=int, default=8, help="live pods at most (default: %(default)s)")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds to settle at the end (%(default)g)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir and its logs even when all held")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--results", type=Path, help="also write the run's figures to this JSON results file")
    parser.add_argument("--markdown", type=Path, metavar="RESULTS", help="only print the table of a results file")
    arguments = parser.parse_args()
    print_markdown_and_exit(arguments, markdown)
    options = SoakOptions(
        cycles=arguments.cycles, seed=arguments.seed, max_pods=arguments.max_pods, settle=arguments.settle
    )
    started_load = load()
    workdir = Path(tempfile.mkdtemp(prefix="kd-soak-", dir="/tmp"))
    run = asyncio.run(soak(options, workdir))
    held = run.verdict.held
    if arguments.results:
        document = {**provenance("crash_soak.py"), "kubelet": KUBELET, "load_at_start": started_load}
        document |= {"held": held, "rows": [list(row) for row in rows(run)], "run": attrs.asdict(run)}
        write_results(arguments.results, document)
    if arguments.output == "json":
        write_json({"loadAtStart": started_load, "run": attrs.asdict(run)}, figures(run))
    else:
        console = Console(width=140)
        console.print(report(run))
        console.print(f"load at start {started_load}, at end {load()}")
    if held and not arguments.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        verdict = "logs and state" if held else "an invariant broke (see the table); logs and state"
        print(f"crash soak: {verdict} kept in {workdir}", file=sys.stderr)
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
