"""The ``--claim`` file to suggest when a driver refuses the suite's default claim: a guess from its words.

Drivers that accept only claims of one shape say so in their refusal ("only requests for all tpu
devices (4) on the node are supported", "prepares exactly 2", "no opaque config of kind GpuConfig").
The suggestion reads those words, writes a claim of that shape for the devices the driver published
on the node beside the run's other outputs, and names the flag that passes it, so the author can rerun
at once and adjust.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubelet_dra.peers.datafiles import replace_file

ALL = re.compile(r"\ball\b", re.IGNORECASE)
EXACTLY = re.compile(r"\bexactly (\d+)", re.IGNORECASE)
CONFIG = re.compile(r"\b(config|configuration|parameters|opaque)\b", re.IGNORECASE)
KIND = re.compile(r"\bkind '?([A-Z][A-Za-z0-9]*)'?")


def example(answer: str, driver: str, devices: int) -> tuple[str, dict[str, Any]]:
    """What the driver's answer seems to ask for, in words, and a ResourceClaimSpec of that shape."""
    request: dict[str, Any] = {"name": "devices", "exactly": {}}
    spec: dict[str, Any] = {"devices": {"requests": [request]}}
    if ALL.search(answer):
        request["exactly"]["allocationMode"] = "All"
        return f"claims for all its devices ({devices} on this node)", spec
    if (wanted := EXACTLY.search(answer)) and 0 < int(wanted.group(1)) <= max(devices, 1):
        request["exactly"]["count"] = int(wanted.group(1))
        return f"claims of exactly {wanted.group(1)} devices", spec
    if CONFIG.search(answer):
        kind = KIND.search(answer)
        parameters = {"kind": kind.group(1)} if kind else {}
        spec["devices"]["config"] = [{"requests": ["devices"], "opaque": {"driver": driver, "parameters": parameters}}]
        request["exactly"]["count"] = 1
        return "claims with an opaque config of its own (fill in its parameters)", spec
    request["exactly"]["count"] = 1
    return "claims of another shape (edit this one until it is prepared)", spec


def suggest(
    answer: str, driver: str, slices: Sequence[Mapping[str, Any]], node: str, directory: Path | None = None
) -> str:
    """The lines of the finding that say what to pass: the flag with a file written for it in ``directory`` (the
    run's outputs'; none without it, or when it cannot be written), and its text."""
    devices = sum(len((item.get("spec") or {}).get("devices") or []) for item in slices)
    what, spec = example(answer, driver, devices)
    text = (
        f"# A claim {driver} accepts on {node}, as a ResourceClaimSpec; requests without deviceClassName use the\n"
        "# conformance suite's DeviceClass (every device of the driver, or --device-class).\n"
        + yaml.safe_dump(spec, sort_keys=False)
    )
    flag = "--claim FILE"
    if directory is not None:
        path = directory / f"claim-{driver}.yaml"
        with contextlib.suppress(OSError):  # then the text below is the file to write
            replace_file(path, text.encode())
            flag = f"--claim {path}"
    body = "\n".join(f"    {line}" for line in text.splitlines())
    return f"if that is the driver's policy ({what}), describe the claims it accepts: {flag}\n{body}"
