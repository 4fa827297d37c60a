"""What ``many_nodes.py`` measured, as figures for ``python -m benchmarks`` and as benchmarks/README.md's tables.

Both read the results document ``many_nodes.py --results`` writes, so the page, the one command's table and the
file never disagree: the totals (all kubelet-dra processes, per node, steady cores) are derived here from each
process's own figures, which are all the file stores.
"""

from __future__ import annotations

from typing import Any

from common import Figure

TARGET_NODES = 1000
TARGET_READY_SECONDS = 120.0
TARGET_MB_PER_NODE = 3.0
TARGET_CORES = 1.0
PHASES = {"start": "start → Ready", "steady": "quiet window", "pods": "pods created → gone"}
"""The phases each process's CPU seconds are measured over, as the table heads them."""

Fleet = dict[str, Any]


def ours(fleet: Fleet) -> list[dict[str, Any]]:
    """The kubelet-dra processes' figures, by role (the real control plane's programs left out)."""
    return [process for process in fleet["processes"].values() if process["ours"]]


def rss_mb(fleet: Fleet) -> float:
    """Resident memory of every kubelet-dra process once all nodes were Ready."""
    return sum(process["rss_mb"] for process in ours(fleet))


def peak_mb(fleet: Fleet) -> float:
    """Each kubelet-dra process's peak resident memory (VmHWM) at the end, summed."""
    return sum(process["peak_mb"] for process in ours(fleet))


def count(fleet: Fleet) -> int:
    return sum(process["count"] for process in ours(fleet))


def mb_per_node(fleet: Fleet) -> float:
    return rss_mb(fleet) / fleet["nodes"]


def steady_cores(fleet: Fleet) -> float:
    """CPU of the kubelet-dra processes over the quiet window, in cores."""
    return sum(process["cpu_s"]["steady"] for process in ours(fleet)) / fleet["steady_s"]


def rate(fleet: Fleet, seconds: str) -> str:
    return f"{fleet[seconds]:.1f} s, {fleet['nodes'] / fleet[seconds]:.1f}/s"


def figures(fleets: list[Fleet]) -> list[Figure]:
    found = []
    for r in fleets:
        where = f"{r['nodes']} nodes, {r['apiserver']} API server"
        found += [
            Figure(
                "many nodes",
                f"all Ready with slices, {where}",
                f"{r['ready_s']:.1f} s",
                f"≤ {TARGET_READY_SECONDS:g} s",
                r["ready_s"] <= TARGET_READY_SECONDS,
            ),
            Figure(
                "many nodes",
                f"memory per node, {where}",
                f"{mb_per_node(r):.2f} MB",
                f"≤ {TARGET_MB_PER_NODE:g} MB",
                mb_per_node(r) <= TARGET_MB_PER_NODE,
                f"{rss_mb(r):.0f} MB in {count(r)} processes, peaks {peak_mb(r):.0f} MB",
            ),
            Figure(
                "many nodes",
                f"steady-state CPU, {where}",
                f"{steady_cores(r):.2f} cores",
                f"< {TARGET_CORES:g} core",
                steady_cores(r) < TARGET_CORES,
            ),
            Figure(
                "many nodes",
                f"pods to Running, {where}",
                f"{r['nodes'] / r['running_s']:.1f} pods/s",
                spread=f"{r['running_s']:.1f} s; gone {rate(r, 'gone_s')}",
            ),
            Figure(
                "many nodes",
                f"nodes Ready during the pods, {where}",
                f"{r['least_ready']} of {r['nodes']}",
                f"{r['nodes']}",
                r["least_ready"] == r["nodes"],
            ),
        ]
    return found


def verdict(met: bool, value: str) -> str:
    return f"{'**met**' if met else '**not met**'} ({value})"


def targets(fleets: list[Fleet]) -> list[str]:
    """The targets' table: each target, met or not, on each API server at the target size."""
    at_size = [fleet for fleet in fleets if fleet["nodes"] == TARGET_NODES]
    if not at_size:
        return []
    rows = {
        f"all Ready with slices ≤ {TARGET_READY_SECONDS:g} s": lambda r: verdict(
            r["ready_s"] <= TARGET_READY_SECONDS, f"{r['ready_s']:.1f} s"
        ),
        f"≤ {TARGET_MB_PER_NODE:g} MB per node, all kubelet-dra processes": lambda r: verdict(
            mb_per_node(r) <= TARGET_MB_PER_NODE, f"{mb_per_node(r):.2f} MB"
        ),
        f"steady state under {TARGET_CORES:g} core": lambda r: verdict(
            steady_cores(r) < TARGET_CORES, f"{steady_cores(r):.2f} cores"
        ),
        "every node Ready while the pods come and go": lambda r: verdict(
            r["least_ready"] == r["nodes"], f"fewest {r['least_ready']:,} of {r['nodes']:,}"
        ),
    }
    lines = [
        "",
        f"| target at {TARGET_NODES:,} nodes | " + " | ".join(r["apiserver"] for r in at_size) + " |",
        "|---|" + "---|" * len(at_size),
    ]
    lines += [f"| {name} | " + " | ".join(cell(r) for r in at_size) + " |" for name, cell in rows.items()]
    return lines


def processes(fleets: list[Fleet]) -> list[str]:
    """Each process's memory and CPU seconds by phase: where the memory and the time go."""
    lines = [
        "",
        "| API server | nodes | process | RSS at rest | peak | CPU: " + " | ".join(PHASES.values()) + " |",
        "|---|---:|---|---:|---:|" + "---:|" * len(PHASES),
    ]
    for r in fleets:
        for role, process in r["processes"].items():
            name = f"`kubelet-dra {role}`" if process["ours"] else role
            name = f"{process['count']} × {name}" if process["count"] > 1 else name
            cpu = " | ".join(f"{process['cpu_s'][phase]:.1f} s" for phase in PHASES)
            lines.append(
                f"| {r['apiserver']} | {r['nodes']:,} | {name} | {process['rss_mb']:,.0f} MB"
                f" | {process['peak_mb']:,.0f} MB | {cpu} |"
            )
    return lines


def markdown(results: dict[str, Any]) -> str:
    """benchmarks/README.md's tables: the fleets, the targets met or not, and each process's memory and CPU."""
    fleets = results["fleets"]
    kubernetes = f", Kubernetes {results['kubernetes']}" if results.get("kubernetes") else ""
    lines = [
        f"`{results['command']}`, {results['date']}, {results['machine']}, Python {results['python']}{kubernetes}:",
        "",
        "| API server | nodes | all Ready + slices | RSS at rest (processes) | per node | peaks summed | steady CPU"
        " | pods → Running | pods → gone | fewest Ready | stop | load: start → Ready → end |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in fleets:
        load = " → ".join(r["load"][moment].split()[0] for moment in ("start", "ready", "end"))
        lines.append(
            f"| {r['apiserver']} | {r['nodes']:,} | {r['ready_s']:.1f} s | {rss_mb(r):,.0f} MB ({count(r)})"
            f" | {mb_per_node(r):.2f} MB | {peak_mb(r):,.0f} MB | {steady_cores(r):.2f} cores"
            f" | {rate(r, 'running_s')} | {rate(r, 'gone_s')} | {r['least_ready']:,} | {r['stop_s']:.1f} s | {load} |"
        )
    return "\n".join([*lines, *targets(fleets), *processes(fleets)]) + "\n"
