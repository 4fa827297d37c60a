"""A real container runtime for the real kubelet: containerd and runc from the distribution, and the kubelet-dra
image ``deploy/build-image`` builds offline, for the interop tests that run ``deploy/`` as pods.

Each test gets a containerd of its own (config, root, state and socket in a temp dir), so nothing of the
machine's containerd is touched; the image archive is imported into its ``k8s.io`` namespace, where the
kubelet's CRI looks, and its pause tag is the sandbox image (no registry is ever asked).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
from realk8s import REPO

BUILD_IMAGE = REPO / "deploy" / "build-image"
IMAGE_DIR = Path(os.environ.get("KDRA_IMAGE_DIR", REPO / "build" / "image"))
IMAGE_ARCHIVE = IMAGE_DIR / "kubelet-dra.tar"
IMAGE = "docker.io/library/kubelet-dra:dev"
PAUSE_IMAGE = "docker.io/library/kubelet-dra:pause"
CNI_BIN_DIR = Path("/usr/lib/cni")
SOURCE_LABEL = "io.kubelet-dra.source"


def runtime_missing() -> str | None:
    """Why containerd cannot be started here, or None when its programs are installed."""
    for program in ("containerd", "runc", "ctr"):
        if shutil.which(program) is None:
            return f"{program} is not installed (fix: apt-get install containerd runc containernetworking-plugins)"
    if not (CNI_BIN_DIR / "bridge").is_file():
        return f"no CNI plugins in {CNI_BIN_DIR} (fix: apt-get install containernetworking-plugins)"
    return None


def image_missing() -> str | None:
    """Why the image archive cannot be used (absent, or built from other sources), or None when it is current."""
    build = f"sudo {BUILD_IMAGE.relative_to(REPO)}"
    if not IMAGE_ARCHIVE.is_file():
        return f"no kubelet-dra image at {IMAGE_ARCHIVE} (fix: build it with {build}, about 4 minutes the first time)"
    wanted = subprocess.run(
        [str(BUILD_IMAGE), "--source-hash"], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    built = archive_label(IMAGE_ARCHIVE, "dev", SOURCE_LABEL)
    if built != wanted:
        return f"the image at {IMAGE_ARCHIVE} was built from other sources ({built} != {wanted}) (fix: {build})"
    return None


def archive_label(archive: Path, tag: str, label: str) -> str | None:
    """A label of the image ``tag`` in an OCI archive (index, manifest, config), read without a runtime."""
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> dict:
            algorithm, value = digest.split(":")
            return json.load(tar.extractfile(f"./blobs/{algorithm}/{value}"))

        index = json.load(tar.extractfile("./index.json"))
        for entry in index["manifests"]:
            if entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
                config = blob(blob(entry["digest"])["config"]["digest"])
                return config.get("config", {}).get("Labels", {}).get(label)
    return None


@attrs.frozen
class Containerd:
    """A running containerd of one test; its CRI socket is ``endpoint``."""

    dir: Path
    address: Path

    @property
    def endpoint(self) -> str:
        return f"unix://{self.address}"

    def ctr(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", "--address", str(self.address), "-n", "k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )


def _config(directory: Path) -> str:
    cni = directory / "cni"
    cni.mkdir(parents=True, exist_ok=True)
    # A bridge network, so that the runtime reports its network ready (the kubelet's node is Ready only then);
    # the pods of deploy/ that the tests run use the host's network, where the API server listens.
    (cni / "10-kubelet-dra.conflist").write_text(
        json.dumps(
            {
                "cniVersion": "0.4.0",
                "name": "kubelet-dra-test",
                "plugins": [
                    {
                        "type": "bridge",
                        "bridge": "kdra0",
                        "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]]},
                    }
                ],
            }
        )
    )
    return (
        "version = 2\n"
        f'root = "{directory}/root"\n'
        f'state = "{directory}/state"\n'
        f'[grpc]\n  address = "{directory}/containerd.sock"\n'
        '[plugins."io.containerd.grpc.v1.cri"]\n'
        f'  sandbox_image = "{PAUSE_IMAGE}"\n'
        # The kubelet asks for oom_score_adj -998 for every pod sandbox; lowering it needs CAP_SYS_RESOURCE, which
        # a machine that is itself a container or a VM sandbox may not grant (runc then fails "can't get final
        # child's PID from pipe: EOF"). Clamped to containerd's own score, as for rootless containerd.
        "  restrict_oom_score_adj = true\n"
        '  [plugins."io.containerd.grpc.v1.cri".cni]\n'
        f'    bin_dir = "{CNI_BIN_DIR}"\n'
        f'    conf_dir = "{cni}"\n'
    )


@contextlib.contextmanager
def containerd(directory: Path) -> Iterator[Containerd]:
    """Start containerd with everything under ``directory``; on exit remove its containers, stop it, unmount."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.toml").write_text(_config(directory))
    runtime = Containerd(directory, directory / "containerd.sock")
    with (directory / "containerd.log").open("ab") as log:
        process = subprocess.Popen(
            ["containerd", "--config", str(directory / "config.toml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while not _serving(runtime):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (directory / "containerd.log").read_text(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"containerd did not start: {' | '.join(tail)}")
            time.sleep(0.2)
        yield runtime
    finally:
        _remove_containers(runtime)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        _unmount_below(directory)


def _serving(runtime: Containerd) -> bool:
    if not runtime.address.exists():
        return False
    return subprocess.run(["ctr", "--address", str(runtime.address), "version"], capture_output=True).returncode == 0


def _remove_containers(runtime: Containerd) -> None:
    """Kill what the kubelet left (a shim outlives containerd), so no process or mount survives the test."""
    with contextlib.suppress(subprocess.SubprocessError):
        if tasks := runtime.ctr("tasks", "ls", "-q").stdout.split():
            runtime.ctr("tasks", "rm", "--force", *tasks)  # SIGKILL, then delete
        if containers := runtime.ctr("containers", "ls", "-q").stdout.split():
            runtime.ctr("containers", "rm", *containers)


def _unmount_below(directory: Path) -> None:
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(f"{directory}/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
