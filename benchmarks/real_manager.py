"""The real kubelet's DRA manager as a row of the manager benchmark: ``dra-manager-harness -mode cycle``.

The harness (``../shared/interop``) is the kubelet 1.36.2's own plugin manager and ``cm/dra`` manager in
one process. It registers the same driver from the same registry dir, reads the same pod from the same
API server and prepares and unprepares its claims, printing one ``took=`` line per call. Each run is a
new process, so its first cycle also dials the driver and the API server: that cycle is dropped, as
the manager's warm-up is (its client and channel are already open when the timed cycles begin).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from kubelet_dra.peers.errors import KubeletDRAError

_TOOK = re.compile(r"^(PrepareResources|UnprepareResources)\(\S+\) took=(\S+) err=(.*)$")
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|μs|ms|s|m|h)")
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
RUN_TIMEOUT = 300.0


class HarnessError(KubeletDRAError):
    """The harness failed a call or did not finish; the message holds its own last words."""


def go_duration(text: str) -> float:
    """Seconds of a Go ``time.Duration`` string (``2.77ms``, ``677.8µs``, ``1m2.5s``)."""
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(number) * _SECONDS[unit] for number, unit in parts)


def timings(output: str, *, keep_first: bool = False) -> tuple[list[float], list[float]]:
    """Prepare and unprepare seconds of each cycle from the harness's stdout, the untimed first one dropped
    unless ``keep_first``; a failed call raises."""
    prepare: list[float] = []
    unprepare: list[float] = []
    for line in output.splitlines():
        if not (found := _TOOK.match(line.strip())):
            continue
        operation, took, error = found.groups()
        if error != "<nil>":
            raise HarnessError(f"the real DRA manager's {operation} failed: {error}")
        (prepare if operation == "PrepareResources" else unprepare).append(go_duration(took))
    return (prepare, unprepare) if keep_first else (prepare[1:], unprepare[1:])


class RealManager:
    """``dra-manager-harness`` on one node's registry dir, with a checkpoint dir of its own."""

    def __init__(self, binary: Path, *, registry_dir: Path, state_dir: Path, node: str, kubeconfig: str) -> None:
        self.binary = binary
        self.registry_dir = registry_dir
        self.state_dir = state_dir
        self.node = node
        self.kubeconfig = kubeconfig

    def command(self, pod: str, driver: str, cycles: int) -> list[str]:
        return [
            str(self.binary),
            *("-mode", "cycle", "-cycles", str(cycles), "-pod", pod, "-driver", driver),
            *("-registry-dir", str(self.registry_dir), "-state-dir", str(self.state_dir)),
            *("-node-name", self.node, "-kubeconfig", self.kubeconfig, "-wipe-slices=false"),
        ]

    async def cycles(self, pod: str, driver: str, cycles: int) -> tuple[list[float], list[float], float]:
        """``cycles`` timed prepare+unprepare cycles of ``pod`` (NS/NAME) after one untimed; and their wall time."""
        prepare, unprepare = timings((await self.run(pod, driver, cycles))[0])
        return prepare, unprepare, sum(prepare) + sum(unprepare)

    async def run(self, pod: str, driver: str, cycles: int, *extra: str) -> tuple[str, str]:
        """The harness's stdout and stderr of one run of ``cycles`` cycles after an untimed one (``timings`` drops
        that one's ``took=`` lines); ``extra`` flags such as ``-trace`` (its lines on stderr) go on its command."""
        process = await asyncio.create_subprocess_exec(
            *self.command(pod, driver, cycles + 1),
            *extra,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise HarnessError(f"dra-manager-harness did not finish {cycles} cycles in {RUN_TIMEOUT:g} s") from None
        output, errors = stdout.decode(errors="replace"), stderr.decode(errors="replace")
        prepare, unprepare = timings(output, keep_first=True)
        if process.returncode != 0 or len(prepare) != cycles + 1 or len(unprepare) != cycles + 1:
            words = errors.strip().splitlines()[-3:]
            raise HarnessError(f"dra-manager-harness exited {process.returncode}: {' | '.join(words)}")
        return output, errors
