"""Load on the embedded API server: many concurrent clients, and slow clients beside them.

Runs ``kubelet-dra apiserver`` in its own process and, for ``--seconds`` in two equal halves,
``--clients`` clients that each loop over a mix of requests (get 40 %, list 25 %, create or
delete 25 %, a one-second watch 10 %, counted but not timed). In the second half ``--slow`` more
clients send their request headers one byte a second, as a slowloris would. Reported per half:
requests, p50/p99 latency, server errors (5xx or dropped connections); the server's memory
before, halfway and at the end; whether the slow clients stalled the others (p99 grown more than 2×).

Run: ``python benchmarks/apiserver_load.py [--clients 200] [--seconds 60] [--slow 5] [--output json]
[--results FILE]``; ``--markdown RESULTS`` prints benchmarks/README.md's table of a results file.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import attrs
from apiserver_bench import Server
from common import (
    Figure,
    add_results_arguments,
    load,
    print_markdown_and_exit,
    save_results,
    status_mb,
    write_json,
)
from rich.console import Console
from rich.table import Table

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
POOL = 1_000
"""ConfigMap names the clients read and write; half of them exist at any time."""
STALL_FACTOR = 2.0
"""The slow clients stall the others when the p99 latency grows by more than this."""


@attrs.define
class Half:
    """What the clients saw in one half of the run."""

    name: str
    latencies: list[float] = attrs.field(factory=list)
    watches: int = 0
    server_errors: int = 0
    client_errors: int = 0

    def percentile_ms(self, fraction: float) -> float | None:
        """The latency at ``fraction`` of the sorted requests, in ms; ``None`` (JSON null) for a half without one."""
        ordered = sorted(self.latencies)
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000, 1) if ordered else None


def rss_mb(pid: int) -> float:
    return status_mb(pid, "VmRSS")


def shown_ms(value: float | None) -> str:
    return "none" if value is None else f"{value:.1f} ms"


def ratio_shown(ratio: float | None) -> str:
    """The second half's p99 over the first's; a half without requests has none (and counts as a stall)."""
    return "none (a half had no request)" if ratio is None else f"×{ratio:.2f}"


async def one_request(session: aiohttp.ClientSession, half: Half) -> None:
    """One request of the mix; a write creates a ConfigMap of a fixed pool or deletes it when it exists, so
    the store's size stays steady and both halves see the same state. Watches are counted, not timed."""
    roll = random.random()
    name = f"load-{random.randrange(POOL)}"
    started = time.monotonic()
    try:
        if roll < 0.40:
            response = await session.get(f"{CONFIG_MAPS}/{name}")
        elif roll < 0.65:
            response = await session.get(f"{CONFIG_MAPS}?limit=50")
        elif roll < 0.90:
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "x" * 200}}
            response = await session.post(CONFIG_MAPS, json=body)
            if response.status == 409:
                response.release()
                response = await session.delete(f"{CONFIG_MAPS}/{name}")
        else:
            response = await session.get(f"{CONFIG_MAPS}?watch=1&timeoutSeconds=1")
        async with response:
            await response.read()
            if response.status >= 500:
                half.server_errors += 1
            elif response.status >= 400 and response.status not in (404, 409):
                half.client_errors += 1
    except (TimeoutError, aiohttp.ClientError):
        half.server_errors += 1
        return
    if roll < 0.90:
        half.latencies.append(time.monotonic() - started)
    else:
        half.watches += 1


async def client(session: aiohttp.ClientSession, halves: list[Half], halfway: float, deadline: float) -> None:
    while (now := time.monotonic()) < deadline:
        await one_request(session, halves[0] if now < halfway else halves[1])


async def slow_client(url: str, context: ssl.SSLContext, until: float) -> None:
    """Sends a GET's headers one byte a second until ``until``, then gives up."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port, ssl=context)
    request = f"GET {CONFIG_MAPS} HTTP/1.1\r\nHost: {parts.netloc}\r\nX-Slow: " + "s" * 10_000
    try:
        for byte in request.encode():
            if time.monotonic() >= until:
                break
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(1)
    except ConnectionError:
        pass
    finally:
        writer.close()
        del reader


async def run(server: Server, clients: int, seconds: float, slow: int) -> tuple[list[Half], list[float]]:
    halves = [Half("clients only"), Half(f"+ {slow} slow clients")]
    async with server.session(clients) as session:
        for index in range(0, POOL, 2):  # the steady state: half the pool exists
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"load-{index}"}, "data": {"a": "x"}}
            async with session.post(CONFIG_MAPS, json=body) as response:
                await response.read()
        memory = [rss_mb(server.process.pid)]
        deadline = time.monotonic() + seconds
        halfway = deadline - seconds / 2
        workers = [asyncio.create_task(client(session, halves, halfway, deadline)) for _ in range(clients)]
        await asyncio.sleep(seconds / 2)
        memory.append(rss_mb(server.process.pid))
        slowpokes = [asyncio.create_task(slow_client(server.url, server.ssl, deadline)) for _ in range(slow)]
        await asyncio.gather(*workers, *slowpokes)
    return halves, [*memory, rss_mb(server.process.pid)]


def report(halves: list[Half], memory: list[float], console: Console) -> dict[str, object]:
    table = Table(title="Embedded API server under load")
    for column in ("Phase", "Requests", "p50", "p99", "Watches", "5xx / dropped", "other 4xx"):
        table.add_column(column, justify="left" if column == "Phase" else "right")
    for half in halves:
        table.add_row(
            half.name,
            f"{len(half.latencies):,}",
            shown_ms(half.percentile_ms(0.5)),
            shown_ms(half.percentile_ms(0.99)),
            str(half.watches),
            str(half.server_errors),
            str(half.client_errors),
        )
    console.print(table)
    first, second = (half.percentile_ms(0.99) for half in halves)
    ratio = second / first if first and second is not None else None
    stalled = ratio is None or ratio > STALL_FACTOR
    before, halfway, after = memory
    console.print(
        f"server memory: {before:.0f} MB before, {halfway:.0f} MB halfway ({halfway - before:+.0f}),"
        f" {after:.0f} MB at the end ({after - halfway:+.0f})"
    )
    console.print(
        f"slow clients {'STALLED' if stalled else 'did not stall'} the others: p99 {ratio_shown(ratio)}"
        f" (limit ×{STALL_FACTOR:g})"
    )
    return {
        "halves": [
            {
                "name": half.name,
                "requests": len(half.latencies),
                "p50_ms": half.percentile_ms(0.5),
                "p99_ms": half.percentile_ms(0.99),
                "mean_ms": round(statistics.fmean(half.latencies) * 1000, 1) if half.latencies else None,
                "watches": half.watches,
                "server_errors": half.server_errors,
                "client_errors": half.client_errors,
            }
            for half in halves
        ],
        "rss_mb": {"before": round(before), "halfway": round(halfway), "after": round(after)},
        "slow_clients_stall_others": stalled,
        "p99_ratio": None if ratio is None else round(ratio, 2),
    }


def figures(summary: dict[str, Any], seconds: float) -> list[Figure]:
    """The summary as the page's figures: each half's requests, latency and errors, the rate, memory, the verdict."""
    found = []
    for half in summary["halves"]:
        watches = f"{half['watches']:,} one-second watches beside them, not timed"
        found += [
            Figure(
                "apiserver-load",
                f"{half['name']}: requests, p50 / p99",
                f"{half['requests']:,}, {shown_ms(half['p50_ms'])} / {shown_ms(half['p99_ms'])}",
                spread=f"mean {half['mean_ms']} ms" if half["requests"] else "",
            ),
            Figure(
                "apiserver-load",
                f"{half['name']}: 5xx or dropped, other 4xx",
                f"{half['server_errors']:,}, {half['client_errors']:,}",
                spread=watches,
            ),
        ]
    timed = sum(half["requests"] for half in summary["halves"])
    rate = max(timed, 1) / seconds
    memory = summary["rss_mb"]
    before, halfway, after = memory["before"], memory["halfway"], memory["after"]
    stalled, ratio = summary["slow_clients_stall_others"], summary["p99_ratio"]
    return [
        *found,
        Figure("apiserver-load", "timed requests per second, both halves", f"{rate:,.0f}/s"),
        Figure(
            "apiserver-load",
            "server memory before / halfway / at the end",
            f"{before} / {halfway} / {after} MB",
            spread=f"{halfway - before:+} MB in the first half, {after - halfway:+} MB in the second",
        ),
        Figure(
            "apiserver-load",
            "slow clients stall the others (p99, second half ÷ first)",
            f"{'yes' if stalled else 'no'}: {ratio_shown(ratio)}",
            target=f"p99 ×≤ {STALL_FACTOR:g}",
            met=not stalled,
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=60, help="length of the run (two halves)")
    parser.add_argument("--slow", type=int, default=5, help="clients sending headers a byte a second, second half")
    parser.add_argument("--output", choices=("table", "json"), default="table")
    add_results_arguments(parser)
    args = parser.parse_args()
    print_markdown_and_exit(args)
    load_at_start = load()
    with tempfile.TemporaryDirectory(prefix="apiserver-load-") as workdir:
        server = Server(Path(workdir))
        try:
            halves, memory = asyncio.run(run(server, args.clients, args.seconds, args.slow))
        finally:
            server.stop()
    summary = report(halves, memory, Console(stderr=args.output == "json"))
    found = figures(summary, args.seconds)
    sizes = {"clients": args.clients, "seconds": args.seconds, "slow": args.slow}
    save_results(args.results, "apiserver_load.py", {**sizes, **summary}, found, load_at_start)
    if args.output == "json":  # the summary beside the figures python -m benchmarks gathers
        write_json({**summary, "loadAtStart": load_at_start}, found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
