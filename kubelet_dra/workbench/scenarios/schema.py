"""The scenario file format as a JSON Schema, written as Python data: one source for the loader and for editors.

The loader validates every file against ``SCHEMA`` before anything runs; ``scenarios/schema.json``
is this schema printed by ``python -m kubelet_dra.workbench.scenarios.schema`` (a test keeps it current),
so editors that know the ``yaml-language-server`` modeline offer completion and flag mistakes.
Steps and expectations are objects with exactly one action (or kind) key, expressed as a
``oneOf`` of ``required`` alternatives that the loader turns into one precise message.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.peers.driver.configfile import DRIVER_NAME_PATTERN
from kubelet_dra.peers.driver.knobs import KNOBS, VERSION_CHOICES
from kubelet_dra.workbench.scenarios.schemabuilders import array, boolean, enum, exactly_one, integer, obj, ref, string
from kubelet_dra.workbench.testbed.objects import KINDS

API_VERSION = "kubelet-dra.dev/v1alpha1"
KIND = "Scenario"
SCHEMA_ID = "https://kubelet-dra.dev/schemas/scenario-v1alpha1.json"
DURATION_PATTERN = r"^[0-9]+(\.[0-9]+)?(ms|s|m)$"
ID_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DIAGNOSIS_PATTERN = r"^F[0-9]+$"
SERVICES = ("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha3.NodeService")
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Gone")
HEALTH = ("Healthy", "Unhealthy", "Unknown")
BLOCKABLE = ("NodePrepareResources", "NodeUnprepareResources")
SOCKETS = ("registration", "service")
GRPC_STATUSES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)


NO_ARGUMENTS = {"type": ["null", "object"], "additionalProperties": False, "properties": {}}
RELEASE = {
    "kubeletVersion": enum(tuple(RELEASES), "pin the kubelet release (default: kubelet-dra replay --kubelet-version)"),
    "featureGates": obj({"DRAOptionalNodeOperations": boolean("alpha in 1.37, default false; needs kubeletVersion")}),
}
CRASH = {
    "crash": boolean(
        "kill the kubelet (SIGKILL; the simulated node stops at once and keeps on disk only what it had written)"
        " instead of stopping it"
    )
}
DRIVER_ID = string("a driver id from `drivers`", pattern=ID_PATTERN)
POD_REF = {
    "pod": string("pod name"),
    "namespace": string("namespace (default: default)"),
}
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
KNOB_VALUE = {"type": ["string", "number", "boolean"]}
FAULTS = {
    "type": "object",
    "description": "fault knobs of the reference driver: knob → value",
    "propertyNames": {"enum": [knob.name for knob in KNOBS]},
    "additionalProperties": KNOB_VALUE,
}

DRIVER = exactly_one(
    {
        "reference": obj(
            {
                "devices": integer("devices on the node (default 8)", minimum=1),
                "health": boolean("serve the v1alpha1.DRAResourceHealth stream"),
                "healthInterval": ref("duration"),
                "republishDelay": ref("duration"),
                "versions": enum(VERSION_CHOICES, "DRA services served and advertised"),
                "faults": FAULTS,
                "args": array(string(), "more flags for `kubelet-dra driver`"),
            },
            description="the bundled reference driver",
        ),
        "command": string(
            "any command line, with placeholders {node} {kubeconfig} {registry_dir} {plugin_dir} {cdi_root}"
            " {driver} {python}"
        ),
        "external": {"const": True, "description": "already running: it registers in node.registryDir"},
    },
    ("reference", "command", "external"),
    {
        "id": DRIVER_ID,
        "name": string(
            "the DRA driver name it registers: a lowercase DNS subdomain such as gpu.example.com",
            pattern=DRIVER_NAME_PATTERN,
        ),
        "env": STRING_MAP,
        "start": boolean("start it before the first step (default true)"),
    },
)
DRIVER["required"] = ["id", "name"]

CONDITIONS: dict[str, dict[str, Any]] = {
    "registration": obj(
        {
            "driver": DRIVER_ID,
            "registered": boolean("registered and usable (default true); false: not registered"),
            "service": enum(SERVICES, "the negotiated service"),
            "instances": integer("number of registered instances"),
        },
        required=("driver",),
    ),
    "diagnosis": obj(
        {"driver": DRIVER_ID, "id": string("failure mode id, e.g. F3", pattern=DIAGNOSIS_PATTERN)},
        required=("driver", "id"),
    ),
    "calls": obj(
        {
            "driver": DRIVER_ID,
            "method": string("e.g. NodePrepareResources"),
            "status": enum(GRPC_STATUSES),
            "claims": array(string(), "claim names in the request (as a set)"),
            "count": integer("exactly this many matching calls"),
            "min": integer("at least this many matching calls"),
            "endpoints": integer("the matching calls went to this many endpoints"),
            "sequence": array(
                obj(
                    {"method": string(), "status": enum(GRPC_STATUSES), "claims": array(string())},
                    required=("method",),
                ),
                "the driver's calls of these methods",
            ),
            "order": enum(("exact", "set"), "sequence in order (default) or as a set"),
        },
        required=("driver",),
    ),
    "pod": obj(
        {
            **POD_REF,
            "phase": enum(PHASES, "Gone: the pod no longer exists"),
            "terminating": boolean("has a deletionTimestamp"),
            "event": obj({"reason": string(), "message": string("a substring of the message")}, required=("reason",)),
            "health": enum(HEALTH, "every device in the containers' allocatedResourcesStatus"),
        },
        required=("pod",),
    ),
    "slices": obj(
        {
            "driver": DRIVER_ID,
            "driverName": string("a driver name not in `drivers`"),
            "node": string("default: the scenario's node"),
            "present": boolean("default true"),
            "count": integer(),
        },
    ),
    "claim": obj(
        {
            "name": string("the claim's name"),
            **POD_REF,
            "podClaim": string("with pod: the pod's claim of this name (generated from a template)"),
            "allocated": boolean(),
            "reserved": boolean("reserved for a pod"),
            "prepared": boolean("prepared in the node's claim cache"),
        },
    ),
    "checkpoint": obj(
        {
            "count": integer("claims in the checkpoint"),
            "claims": array(string(), "exactly these claim names"),
            "shareIDs": boolean("every device has a share ID"),
        },
    ),
    "cdi": obj(
        {
            **POD_REF,
            "container": string("default: the first container"),
            "count": integer(),
            "ids": array(string(), "each pattern (fnmatch) matches a CDI ID"),
            "resolve": boolean(
                "at least one ID, each fully qualified (vendor/class=name) and declared by a CDI spec file in the"
                " node's CDI root"
            ),
        },
        required=("pod",),
    ),
    "wipe": obj({"driver": DRIVER_ID, "pending": boolean("default true")}, required=("driver",)),
    "blocked": obj(
        {
            "driver": DRIVER_ID,
            "method": enum(BLOCKABLE, "the call its prepare-block or unprepare-block knob holds"),
            "count": integer("at least this many such calls held (default 1)"),
        },
        required=("driver", "method"),
    ),
}
CONDITION = exactly_one(
    CONDITIONS,
    tuple(CONDITIONS),
    {
        "name": string("names this expectation in reports"),
        "within": ref("duration"),
        "hold": ref("duration"),
    },
)

SOCKET = obj({"driver": DRIVER_ID, "socket": enum(SOCKETS)}, required=("driver", "socket"))
PREPARE = obj({**POD_REF, "error": string("expect an error containing this")}, required=("pod",))
ACTIONS: dict[str, dict[str, Any]] = {
    "apply": array(ref("manifest"), min_items=1),
    "delete": array(
        obj({"kind": enum(tuple(KINDS)), "name": string(), "namespace": string()}, required=("kind", "name")),
        min_items=1,
    ),
    "createPod": obj(
        {
            "name": string(),
            "namespace": string(),
            "node": string("default: the scenario's node"),
            "claims": {**STRING_MAP, "description": "pod claim name → ResourceClaim name"},
            "templates": {**STRING_MAP, "description": "pod claim name → ResourceClaimTemplate name"},
            "containers": array(string(), min_items=1),
        },
        required=("name",),
    ),
    "deletePod": obj({**POD_REF, "force": boolean("grace period 0")}, required=("pod",)),
    "reserve": obj(
        {"claim": string("an allocated ResourceClaim"), **POD_REF},
        required=("claim", "pod"),
        description="reserve a claim for a pod, as the scheduler does (for claims allocated by hand)",
    ),
    "start": DRIVER_ID,
    "stop": DRIVER_ID,
    "kill": DRIVER_ID,
    "restart": DRIVER_ID,
    "restartNode": {
        **NO_ARGUMENTS,
        "properties": {**RELEASE, **CRASH},
        "description": "restart the simulated kubelet, keeping its checkpoint; with kubeletVersion as that release"
        " (an upgrade or a downgrade), with its featureGates; with crash: true it is killed first",
    },
    "stopNode": {
        **NO_ARGUMENTS,
        "properties": CRASH,
        "description": "stop the kubelet (its checkpoint stays); with crash: true it is killed",
    },
    "startNode": NO_ARGUMENTS,
    "stopApiServer": NO_ARGUMENTS,
    "startApiServer": NO_ARGUMENTS,
    "prepare": PREPARE,
    "unprepare": PREPARE,
    "fault": obj(
        {
            "driver": DRIVER_ID,
            "set": FAULTS,
            "clear": array({"enum": [knob.name for knob in KNOBS]}, "knobs to clear; empty: all"),
        },
        required=("driver",),
    ),
    "health": obj(
        {"driver": DRIVER_ID, "devices": {"type": "object", "additionalProperties": enum(HEALTH)}, "message": string()},
        required=("driver", "devices"),
    ),
    "removeSocket": SOCKET,
    "restoreSocket": SOCKET,
    "sleep": ref("duration"),
    "wait": ref("condition"),
    "expect": {"oneOf": [ref("condition"), array(ref("condition"), min_items=1)]},
}
STEP = exactly_one(
    ACTIONS,
    tuple(ACTIONS),
    {"name": string("names this step in reports"), "timeout": ref("duration")},
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "kubelet-dra scenario",
    **obj(
        {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": KIND},
            "metadata": obj(
                {"name": string(pattern=ID_PATTERN), "description": string(), "tags": array(string())},
                required=("name",),
            ),
            "node": obj(
                {
                    "name": string("node name (default node-1)"),
                    **RELEASE,
                    "kubeletTiming": boolean("reconcile every second like the kubelet"),
                    "pluginMap": enum(("instances", "replace")),
                    "legacyServices": boolean("accept ≤1.32 services (v1alpha4)"),
                    "health": boolean("follow health streams (default true)"),
                    "registryDir": string("watch this registry dir (drivers already running)"),
                    "kubeconfig": string("use this cluster's API server instead of the embedded one"),
                    "controlPlane": boolean("allocate claims (default true)"),
                },
            ),
            "timing": obj(
                {
                    "wipingDelay": ref("duration"),
                    "callTimeout": ref("duration"),
                    "reconcilePeriod": ref("duration"),
                    "podBackOffPeriod": ref("duration"),
                    "syncFrequency": ref("duration"),
                    "podRetryPeriod": {
                        **ref("duration"),
                        "deprecated": True,
                        "description": "now podBackOffPeriod",
                    },
                    "podResyncPeriod": {**ref("duration"), "deprecated": True, "description": "now syncFrequency"},
                    "stepTimeout": ref("duration"),
                    "within": ref("duration"),
                },
                description="overrides of the kubelet's constants and the scenario's default deadlines",
            ),
            "drivers": array(ref("driver")),
            "objects": array(ref("manifest"), "applied before the first step"),
            "steps": array(ref("step"), min_items=1),
        },
        required=("apiVersion", "kind", "metadata", "steps"),
    ),
    "$defs": {
        "duration": {
            "type": ["string", "number"],
            "pattern": DURATION_PATTERN,
            "minimum": 0,
            "description": "seconds, or a string like 500ms, 2s, 1.5m",
        },
        "manifest": {
            "type": "object",
            "required": ["apiVersion", "kind", "metadata"],
            "properties": {
                "apiVersion": string(),
                "kind": enum(tuple(KINDS)),
                "metadata": {"type": "object", "required": ["name"], "properties": {"name": string()}},
            },
        },
        "driver": DRIVER,
        "condition": CONDITION,
        "step": STEP,
    },
}


def main() -> None:
    sys.stdout.write(json.dumps(SCHEMA, indent=2) + "\n")


if __name__ == "__main__":
    main()
