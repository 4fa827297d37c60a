"""Benchmark of the tap's overhead: the same call to a driver directly and through ``kubelet-dra tap``.

Everything runs as its own process, as on a node: the embedded API server (``kubelet-dra
apiserver``), the reference driver (``kubelet-dra driver``) registering in the tap's driver dir,
and ``kubelet-dra tap`` recording to a file; this process plays the kubelet. It asks the mirrored
registration socket for ``GetInfo`` (which starts the tap's service socket, as the kubelet's first
GetInfo does), then times, alternating so both see the same machine load: ``GetInfo`` on the
driver's registration socket and on the mirror, and ``NodeUnprepareResources`` of no claims (the
driver answers at once, so the figure is the tap's cost, not the driver's) on the driver's
endpoint and on the tap's. Each call opens no new connection: one channel per target, as the
kubelet keeps one per driver.

Target: the tap adds at most 2 ms to a call at p50 (one more gRPC hop through a Python process); p99 is
shown beside it, but on a shared 2-core machine it measures the load more than the tap.

Run: ``python benchmarks/tap_bench.py [--calls N] [--output json] [--results FILE]``; ``--markdown RESULTS`` prints
benchmarks/README.md's table of a results file.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
from common import (
    Figure,
    Percentiles,
    add_results_arguments,
    load,
    print_markdown_and_exit,
    save_results,
    write_json,
)
from rich.console import Console
from rich.table import Table

from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.services import DRA_V1, REGISTRATION

TARGET_ADDED_P50 = 0.002
DRIVER = "gpu.example.com"
NODE = "bench-node"


def start(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as sink:
        return subprocess.Popen([sys.executable, "-m", "kubelet_dra", *args], stdout=sink, stderr=subprocess.STDOUT)


async def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"tap_bench: {path} did not appear within {timeout:.0f} s")
        await asyncio.sleep(0.05)


async def timed(calls: int, pairs: dict[str, tuple[object, object]]) -> dict[str, dict[str, list[float]]]:
    """For each operation, ``calls`` samples of the direct call and of the call through the tap, interleaved."""
    samples: dict[str, dict[str, list[float]]] = {name: {"direct": [], "tap": []} for name in pairs}
    for _ in range(calls):
        for name, (direct, through) in pairs.items():
            for which, rpc in (("direct", direct), ("tap", through)):
                started = time.perf_counter()
                await rpc()  # type: ignore[operator]
                samples[name][which].append(time.perf_counter() - started)
    return samples


async def measure(calls: int, workdir: Path) -> dict[str, dict[str, list[float]]]:
    dirs = {name: workdir / name for name in ("drivers", "kubelet-reg", "plugin", "tap", "cdi")}
    kubeconfig = workdir / "kubeconfig"
    dirs["kubelet-reg"].mkdir()  # a kubelet's registry dir exists before any tap
    processes = [
        start("apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", str(kubeconfig), log=workdir / "api.log")
    ]
    try:
        await wait_for(kubeconfig)
        processes.append(
            start(
                *("tap", "--driver-registry-dir", str(dirs["drivers"]), "--registry-dir", str(dirs["kubelet-reg"])),
                *("--socket-dir", str(dirs["tap"]), "--record-calls", str(workdir / "calls.jsonl")),
                log=workdir / "tap.log",
            )
        )
        await wait_for(dirs["drivers"])
        processes.append(
            start(
                *("driver", "--driver-name", DRIVER, "--node-name", NODE, "--kubeconfig", str(kubeconfig)),
                *("--registry-dir", str(dirs["drivers"]), "--plugin-dir", str(dirs["plugin"])),
                *("--cdi-root", str(dirs["cdi"])),
                log=workdir / "driver.log",
            )
        )
        mirror = dirs["kubelet-reg"] / f"{DRIVER}-reg.sock"
        await wait_for(mirror)
        channels = {
            name: grpc.aio.insecure_channel(f"unix:{path}")
            for name, path in (("driver-reg", dirs["drivers"] / f"{DRIVER}-reg.sock"), ("mirror", mirror))
        }
        info = await REGISTRATION.stub(channels["mirror"]).GetInfo(registration_pb2.InfoRequest(), timeout=10)
        channels["driver"] = grpc.aio.insecure_channel(f"unix:{dirs['plugin'] / 'dra.sock'}")
        channels["tap"] = grpc.aio.insecure_channel(f"unix:{info.endpoint}")
        unprepare = DRA_V1.message_class("NodeUnprepareResourcesRequest")()

        def get_info(channel: grpc.aio.Channel) -> object:
            return lambda: REGISTRATION.stub(channel).GetInfo(registration_pb2.InfoRequest(), timeout=10)

        def node_unprepare(channel: grpc.aio.Channel) -> object:
            return lambda: DRA_V1.stub(channel).NodeUnprepareResources(unprepare, timeout=10)

        pairs = {
            "GetInfo": (get_info(channels["driver-reg"]), get_info(channels["mirror"])),
            "NodeUnprepareResources": (node_unprepare(channels["driver"]), node_unprepare(channels["tap"])),
        }
        await timed(max(10, calls // 20), pairs)  # warm-up: connections up, code paths hot
        samples = await timed(calls, pairs)
        for channel in channels.values():
            await channel.close()
        return samples
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)


def figures(samples: dict[str, dict[str, list[float]]]) -> list[Figure]:
    result = []
    for name, by_way in samples.items():
        direct, through = Percentiles.of(by_way["direct"]), Percentiles.of(by_way["tap"])
        added = through.p50 - direct.p50
        result += [
            Figure("tap", f"{name} direct p50/p95/p99", f"{direct.ms()} ms"),
            Figure("tap", f"{name} through the tap p50/p95/p99", f"{through.ms()} ms"),
            Figure(
                "tap",
                f"{name} added by the tap, p50 / p99",
                f"{added * 1e3:.2f} / {(through.p99 - direct.p99) * 1e3:.2f} ms",
                target=f"p50 +≤ {TARGET_ADDED_P50 * 1e3:.0f} ms",
                met=added <= TARGET_ADDED_P50,
            ),
        ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, metavar="N", help="calls timed per way (default: 1000)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_results_arguments(parser)
    args = parser.parse_args()
    print_markdown_and_exit(args)
    if args.calls < 2:
        parser.error("--calls must be at least 2 to give percentiles")
    load_at_start = load()
    workdir = Path(tempfile.mkdtemp(dir="/tmp", prefix="kd-tapb-"))  # short: Unix socket paths fit in 107 bytes
    try:
        samples = asyncio.run(measure(args.calls, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = figures(samples)
    save_results(args.results, "tap_bench.py", {"calls": args.calls}, result, load_at_start)
    if args.output == "json":
        write_json({"calls": args.calls, "loadAtStart": load_at_start}, result)
        return
    table = Table(title=f"tap overhead, {args.calls} calls each way, load {load_at_start} → {load()}")
    for column in ("figure", "value", "target", "met"):
        table.add_column(column)
    for figure in result:
        met = {True: "[green]met[/green]", False: "[red]not met[/red]", None: ""}[figure.met]
        table.add_row(figure.name, figure.value, figure.target, met)
    Console().print(table)


if __name__ == "__main__":
    main()
