"""``kubelet-dra tap`` beside the real kubelet 1.36.2 and the Go example driver registered in the kubelet's own dir:
refused over the driver's live socket, two taps at once, and put back in docs/tap.md's order, the kubelet's
checkpoint, its registered driver and the driver's sockets stay exactly as they were."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

from helpers import KubeletDRAProcess, eventually, kubelet_dra
from realk8s import RealControlPlane, real_kubelet
from test_tap_real_kubelet import DRIVERS, cluster, driver_command, plugin_lines

__all__ = ["cluster"]  # the module's control plane, as test_tap_real_kubelet starts it

NODE, DRIVER = DRIVERS["example"]


def sockets(directory: Path) -> dict[str, tuple[int, int, bool]]:
    """Each socket under ``directory``: (device, inode, whether something listens on it)."""
    found = {}
    for path in sorted(directory.glob("**/*.sock")):
        status = os.lstat(path)
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(path))
                listening = True
            except OSError:
                listening = False
        found[str(path)] = (status.st_dev, status.st_ino, listening)
    return found


def said(log: str, message: str) -> int:
    """How many times the real kubelet logged ``message`` about the driver."""
    return sum(f'"{message}"' in line and f'driverName="{DRIVER}"' in line for line in log.splitlines())


class Driver:
    """The Go example driver, registering in ``registry``."""

    def __init__(self, plane: RealControlPlane, bin_dir: Path, dirs: dict[str, Path], registry: Path) -> None:
        command = driver_command("example", plane, bin_dir, {**dirs, "drivers": registry})
        self.log = (dirs["logs"] / f"driver-{len(list(dirs['logs'].iterdir()))}.log").open("w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self, signum: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)
            self.process.wait(timeout=30)
        self.log.close()


def last_registration(log: str) -> str:
    return [line for line in log.splitlines() if '"Registered DRA plugin"' in line][-1]


def refused(tap: KubeletDRAProcess) -> bool:
    return any("Not mirrored" in line for line in tap.lines)


async def tap(*args: str) -> KubeletDRAProcess:
    process = await KubeletDRAProcess.start("-v", "2", "tap", *args)
    await process.wait_line("Tap started", timeout=60)
    return process


async def test_the_tap_beside_the_real_kubelet_leaves_its_checkpoint_driver_and_sockets_as_they_were(
    cluster: RealControlPlane, interop_bin: Path, short_dir: Path
) -> None:
    dirs = {name: short_dir / name for name in ("drivers", "plugins", "cdi", "tap", "logs")}
    for directory in dirs.values():
        directory.mkdir()
    taps: list[KubeletDRAProcess] = []
    drivers: list[Driver] = []
    with real_kubelet(cluster, NODE) as kubelet:
        flags = ("--driver-registry-dir", str(dirs["drivers"]), "--registry-dir", str(kubelet.registry_dir))
        flags += ("--socket-dir", str(dirs["tap"]))

        def registered() -> int:
            return said(kubelet.log(), "Registered DRA plugin")

        def unregistered() -> int:
            return said(kubelet.log(), "Unregistered DRA plugin")

        def driver_sockets() -> dict[str, tuple[int, int, bool]]:
            return sockets(kubelet.registry_dir) | sockets(dirs["plugins"])

        try:
            drivers.append(Driver(cluster, interop_bin, dirs, kubelet.registry_dir))
            assert await eventually(lambda: registered() == 1, timeout=60), plugin_lines(kubelet.log())
            checkpoint = kubelet.checkpoint.read_bytes()
            before = driver_sockets()
            assert len(before) == 2 and all(listening for *_, listening in before.values()), before

            # a stale socket of the driver's name in the tap's dir (a driver that crashed registered through it)
            (registration,) = (Path(path).name for path in sockets(kubelet.registry_dir))
            with socket.socket(socket.AF_UNIX) as stale:
                stale.bind(str(dirs["drivers"] / registration))
            code, _, err = await kubelet_dra("tap", *flags, "--for", "5")
            assert code == 2 and "something listens on" in err and len(err.strip().splitlines()) == 1, err
            assert driver_sockets() == before
            (dirs["drivers"] / registration).unlink()

            # two taps at once, the driver rolled into their dir: one mirrors it, the other's stop leaves it
            taps += [await tap(*flags), await tap(*flags)]
            drivers.pop().stop()
            assert await eventually(lambda: unregistered() == 1, timeout=30), plugin_lines(kubelet.log())
            drivers.append(Driver(cluster, interop_bin, dirs, dirs["drivers"]))
            assert await eventually(lambda: registered() == 2, timeout=60), plugin_lines(kubelet.log())
            assert f'endpoint="{dirs["tap"]}/' in last_registration(kubelet.log())
            (other,) = await eventually(lambda: [one for one in taps if refused(one)], timeout=30)
            (winner,) = [one for one in taps if one is not other]
            through_tap = driver_sockets()
            assert await other.stop() == 0
            assert driver_sockets() == through_tap and unregistered() == 1
            taps.remove(other)

            # put back: the driver's pod is killed at the end of its grace (its socket stays in the tap's dir), the
            # driver registers in the kubelet's dir again, then the tap stops
            drivers.pop().stop(signal.SIGKILL)
            drivers.append(Driver(cluster, interop_bin, dirs, kubelet.registry_dir))
            direct = f'endpoint="{dirs["plugins"]}/'
            assert await eventually(
                lambda: registered() == 3 and direct in last_registration(kubelet.log()), timeout=60
            ), plugin_lines(kubelet.log())
            back = driver_sockets()
            assert len(back) == 2 and all(listening for *_, listening in back.values()), back
            assert await winner.stop() == 0
            taps.remove(winner)
            assert driver_sockets() == back, "the tap removed only its own sockets"
            assert not await eventually(lambda: unregistered() > 2, timeout=5), plugin_lines(kubelet.log())
            assert kubelet.checkpoint.read_bytes() == checkpoint
        finally:
            for process in taps:
                await process.stop()
            for driver in drivers:
                driver.stop()
