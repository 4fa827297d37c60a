"""The reference driver reaches the API server without importing the official ``kubernetes`` package when its
kubeconfig needs nothing only that package does: the import cost a driver 0.4 s of CPU at each start, and the
suite starts hundreds. A kubeconfig with an exec plugin still goes through the package."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path

import pytest
from driver_support import Env
from helpers import KubeletDRAProcess
from kubeconfigs import client_certificate, exec_kubeconfig, kubeconfig

from kubelet_dra.peers.kube.client import api_path
from kubelet_dra.workbench.testbed.serverthread import ServerThread

OFFICIAL = re.compile(r"\|\s+kubernetes(\.|$)")
"""An ``-X importtime`` line of a module of the official package."""

USE = """
import asyncio, sys
import kubelet_dra.peers.driver.plugin
from kubelet_dra.peers.kube.client import KubeClient
kube = KubeClient.from_kubeconfig(sys.argv[1])
print(asyncio.run(kube.get(sys.argv[2]))["kind"])
print(any(name == "kubernetes" or name.startswith("kubernetes.") for name in sys.modules))
"""


async def start_driver(env: Env, kubeconfig: Path, environ: dict[str, str] | None = None) -> KubeletDRAProcess:
    """The reference driver of ``env``'s node, as the testbed starts it, with ``kubeconfig``."""
    return await KubeletDRAProcess.start(
        "driver",
        *("--driver-name", env.driver, "--node-name", env.node, "--kubeconfig", str(kubeconfig)),
        *("--registry-dir", str(env.registry_dir), "--plugin-dir", str(env.plugin_dir(env.driver))),
        *("--cdi-root", str(env.cdi_root)),
        env=environ,
    )


async def test_the_driver_publishes_its_slices_without_the_official_package(env: Env) -> None:
    driver = await start_driver(env, env.apiserver.kubeconfig, {"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        await driver.wait_line("published ResourceSlices")
    finally:
        assert await driver.stop() == 0
    assert any("kubelet_dra.peers.driver.plugin" in line for line in driver.lines), "no import times logged"
    assert [line for line in driver.lines if OFFICIAL.search(line)] == []


def kubeconfigs(apiserver: ServerThread, tmp_path: Path) -> dict[str, Path]:
    certificate, key = client_certificate("admin")
    token_file = tmp_path / "token"
    token_file.write_text(apiserver.server.admin_token)
    return {
        "token": apiserver.kubeconfig,
        "token file": kubeconfig(apiserver, tmp_path / "file.kubeconfig", user__token=None, user__tokenFile="token"),
        "client certificate": kubeconfig(
            apiserver,
            tmp_path / "cert.kubeconfig",
            user__client_certificate_data=base64.b64encode(certificate).decode(),
            user__client_key_data=base64.b64encode(key).decode(),
        ),
        "exec plugin": exec_kubeconfig(apiserver, tmp_path, apiserver.server.admin_token),
    }


@pytest.mark.parametrize(
    ("shape", "official"),
    [("token", False), ("token file", False), ("client certificate", False), ("exec plugin", True)],
)
def test_only_a_kubeconfig_the_package_alone_reads_imports_it(
    apiserver: ServerThread, tmp_path: Path, shape: str, official: bool
) -> None:
    path = kubeconfigs(apiserver, tmp_path)[shape]
    done = subprocess.run(
        [sys.executable, "-c", USE, str(path), api_path("", "v1", "namespaces", name="default")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Namespace", str(official)]


async def test_a_kubeconfig_field_the_driver_cannot_use_is_one_line(env: Env, tmp_path: Path) -> None:
    path = kubeconfig(env.apiserver, tmp_path / "kc", user__token=None, user__tokenFile="gone")
    driver = await start_driver(env, path)
    assert await driver.wait() == 2
    assert driver.lines == [
        f"kubelet-dra: error: {path}: kubeconfig unusable: user.tokenFile cannot be read: No such file or directory:"
        f" {tmp_path / 'gone'} (fix: pass --kubeconfig with a kubeconfig file, e.g. the one `kubelet-dra apiserver`"
        " writes)"
    ]
