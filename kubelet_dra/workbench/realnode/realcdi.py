"""The CDI devices the real kubelet gave a container, as its container runtime received them.

The kubelet names the sandbox it created for a pod in its own log (at -v 4: "Created PodSandbox
for pod"); Kubernetes' fake CRI logs each CreateContainer with its sandbox, the container's name
and the CDI device IDs of the request (at -v 1, its default). Both logs are the realnode's files,
so the pairing needs no runtime API: the pod's last sandbox, that sandbox's last creation of the
container (a restarted container is created again).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

SANDBOX_LINE = re.compile(r'"Created PodSandbox for pod" podSandboxID="(?P<sandbox>[^"]+)" pod="(?P<pod>[^"]+)"')
"""The kubelet's line (kuberuntime_manager, -v 4) once the runtime returned the pod's sandbox."""
CREATE_LINE = re.compile(
    r" CreateContainer .* err=<nil> req=sandbox=(?P<sandbox>\S+) container=(?P<container>\S+) .*"
    r" cdi=\[(?P<cdi>[^\]]*)\]"
)
"""The fake CRI's line for a CreateContainer that succeeded: ``cdi=[ID ID …]`` is Go's ``%v`` of the IDs."""


def _lines(path: Path) -> list[str]:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace").splitlines()
    return []


def pod_sandbox(kubelet_log: Path, namespace: str, pod: str) -> str | None:
    """The ID of the last sandbox the kubelet created for ``namespace/pod``."""
    wanted = f"{namespace}/{pod}"
    mine = [
        match["sandbox"]
        for line in _lines(kubelet_log)
        if (match := SANDBOX_LINE.search(line)) and match["pod"] == wanted
    ]
    return mine[-1] if mine else None


def container_devices(runtime_log: Path, sandbox: str, container: str) -> list[str] | None:
    """The CDI device IDs of the last CreateContainer of ``container`` in ``sandbox``; ``None`` if none was logged."""
    created = [
        match["cdi"].split()
        for line in _lines(runtime_log)
        if (match := CREATE_LINE.search(line)) and match["sandbox"] == sandbox and match["container"] == container
    ]
    return created[-1] if created else None
