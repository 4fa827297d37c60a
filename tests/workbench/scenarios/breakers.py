"""How to break each library scenario, and the expectation that must then be reported broken.

Every scenario in ``scenarios/`` must be able to fail: replayed with a fault knob of the reference
driver flipped at start (``faults``), or with a small change to the file (``mutation``: old text →
new text), it must report the named expectation (or step) as broken.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Breaker:
    broken: str
    """The name of the expectation (or step) that must be reported broken."""
    faults: dict[str, dict[str, str]] = attrs.field(factory=dict)
    mutation: tuple[str, str] | None = None


BREAKERS: dict[str, Breaker] = {
    "apiserver-restart.yaml": Breaker(
        "deletion seen after the API server restart", faults={"gpu": {"unprepare-error": "busy"}}
    ),
    "cdi-two-claims-two-containers.yaml": Breaker(
        "main has both claims' devices", faults={"gpu": {"cdi-unqualified": "true"}}
    ),
    "driver-v1-only.yaml": Breaker("v1.DRAPlugin negotiated", faults={"gpu": {"versions": "v1beta1"}}),
    "driver-v1beta1-only.yaml": Breaker("v1beta1.DRAPlugin negotiated", faults={"gpu": {"versions": "v1"}}),
    "health-healthy-unhealthy-healthy.yaml": Breaker("device healthy", mutation=("health: true, ", "")),
    "health-negotiation-1-36.yaml": Breaker(
        "health followed though not advertised", mutation=('kubeletVersion: "1.36"', 'kubeletVersion: "1.37"')
    ),
    "health-negotiation-1-37.yaml": Breaker(
        "health not followed when not advertised", mutation=('kubeletVersion: "1.37"', 'kubeletVersion: "1.36"')
    ),
    "kubelet-crash-during-prepare.yaml": Breaker(
        "pod runs after the crash", faults={"gpu": {"prepare-error": "no power"}}
    ),
    "kubelet-restart-during-prepare-two-drivers.yaml": Breaker(
        "nic prepared after the restart", faults={"nic": {"prepare-error": "link down"}}
    ),
    "kubelet-restart-during-prepare.yaml": Breaker(
        "pod runs after the kubelet restart", faults={"gpu": {"prepare-error": "no power"}}
    ),
    "kubelet-restart-during-unprepare-two-drivers.yaml": Breaker(
        "nic unprepared after the restart", faults={"nic": {"unprepare-error": "busy"}}
    ),
    "kubelet-restart-during-unprepare.yaml": Breaker(
        "pod gone after the kubelet restart", faults={"gpu": {"unprepare-error": "busy"}}
    ),
    "legacy-v1alpha4-driver-rejected.yaml": Breaker("rejected as F6", faults={"gpu": {"versions": "v1"}}),
    "legacy-v1alpha4-driver.yaml": Breaker(
        "legacy service negotiated", mutation=("node: {legacyServices: true}", "node: {legacyServices: false}")
    ),
    "one-connection-for-all-calls.yaml": Breaker(
        "step 3: pod p1 phase=Running", faults={"gpu": {"prepare-error": "no power"}}
    ),
    "optional-node-operations.yaml": Breaker(
        "the unprepare is skipped",
        mutation=("skipNodeOperations: [NodeUnprepareResources]", "skipNodeOperations: []"),
    ),
    "pod-lifecycle.yaml": Breaker(
        "step 4: cdi p1 container=main ids=[k8s.gpu.example.com/device=*]", faults={"gpu": {"cdi-unqualified": "true"}}
    ),
    "prepare-blocked-then-unblocked.yaml": Breaker(
        "pod runs once prepare is unblocked", faults={"gpu": {"prepare-delay": "5"}}
    ),
    "prepare-fails-then-succeeds.yaml": Breaker("failure reported as an event", faults={"gpu": {"prepare-delay": "5"}}),
    "prepare-unprepare-by-hand.yaml": Breaker(
        "step 6: cdi p1 container=main count=2 ids=[k8s.gpu.example.com/device=common]",
        faults={"gpu": {"cdi-unqualified": "true"}},
    ),
    "prepare-while-unpreparing-1-36.yaml": Breaker(
        "joins the claim being unprepared", mutation=('kubeletVersion: "1.36"', 'kubeletVersion: "1.37"')
    ),
    "prepare-while-unpreparing-1-37.yaml": Breaker(
        "refused while the claim is being unprepared", mutation=('kubeletVersion: "1.37"', 'kubeletVersion: "1.36"')
    ),
    "register-after-getinfo-failure.yaml": Breaker(
        "registered once GetInfo answers", faults={"gpu": {"getinfo-type": "CSIPlugin"}}
    ),
    "register-after-kubelet-restart.yaml": Breaker(
        "slices republished after the kubelet's start-up wipe", faults={"gpu": {"no-republish": "true"}}
    ),
    "register-after-plugin-restart.yaml": Breaker(
        "registered again after the plugin restart", mutation=("  - restart: gpu\n", "  - stop: gpu\n")
    ),
    "reprepare-duplicates-devices-1-36.yaml": Breaker(
        "each CDI device twice", mutation=('kubeletVersion: "1.36"', 'kubeletVersion: "1.37"')
    ),
    "reprepare-replaces-devices.yaml": Breaker(
        "prepared again after the restart", mutation=("  - restartNode:\n", "  - sleep: 100ms\n")
    ),
    "rolling-update-two-instances.yaml": Breaker(
        "both instances registered", mutation=("--registry-dir {registry_dir}/new", "--registry-dir {registry_dir}")
    ),
    "service-reconnect.yaml": Breaker("reconnected", mutation=("  - start: gpu\n", "  - sleep: 100ms\n")),
    "service-socket-after-registration.yaml": Breaker(
        "connected once the service socket appears",
        mutation=("  - restoreSocket: {driver: gpu, socket: service}\n", "  - sleep: 100ms\n"),
    ),
    "share-ids.yaml": Breaker("share ID in the checkpoint", faults={"gpu": {"versions": "v1beta1"}}),
    "slices-kept-when-plugin-restarts-in-time.yaml": Breaker(
        "registered again in time", mutation=("  - start: gpu\n", "  - sleep: 100ms\n")
    ),
    "slices-wiped-after-plugin-stops.yaml": Breaker(
        "slices wiped after the wiping delay", mutation=("wipingDelay: 2s", "wipingDelay: 30s")
    ),
    "slices-wiped-after-unregistration.yaml": Breaker(
        "slices wiped after the wiping delay", mutation=("wipingDelay: 1s", "wipingDelay: 30s")
    ),
    "slices-wiped-when-endpoint-unserved.yaml": Breaker(
        "the slice is wiped after the wiping delay", mutation=("wipingDelay: 3s", "wipingDelay: 30s")
    ),
    "slices-wiped-at-kubelet-start.yaml": Breaker(
        "the driver publishes for its own node", faults={"gpu": {"slices-node": "node-2"}}
    ),
    "two-drivers-one-failing.yaml": Breaker(
        "pod runs once both drivers prepared", mutation=("  - fault: {driver: nic, clear: [prepare-error]}\n", "")
    ),
    "unprepare-fails-then-succeeds.yaml": Breaker("unprepare retried", faults={"gpu": {"unprepare-block": "true"}}),
    "unprepare-names-from-cache-1-36.yaml": Breaker(
        "nothing unprepared without the name in the pod", mutation=('kubeletVersion: "1.36"', 'kubeletVersion: "1.37"')
    ),
    "unprepare-names-from-cache-1-37.yaml": Breaker(
        "unprepared by the name in the cache", mutation=('kubeletVersion: "1.37"', 'kubeletVersion: "1.36"')
    ),
    "unprepare-pod-deleted-while-kubelet-down.yaml": Breaker(
        "claim of the deleted pod unprepared", faults={"gpu": {"unprepare-error": "busy"}}
    ),
    "unprepare-pod-reference-1-36.yaml": Breaker(
        "unprepared although another pod uses it", mutation=('kubeletVersion: "1.36"', 'kubeletVersion: "1.37"')
    ),
    "unprepare-pod-reference-1-37.yaml": Breaker(
        "the other pod's claim is left alone", mutation=('kubeletVersion: "1.37"', 'kubeletVersion: "1.36"')
    ),
    "health-unknown-when-plugin-stops.yaml": Breaker(
        "device health unknown once the driver is gone", mutation=("  - stop: gpu\n", "")
    ),
    "pod-created-while-kubelet-stopped.yaml": Breaker(
        "pod runs once the kubelet is back", faults={"gpu": {"prepare-error": "no power"}}
    ),
    "prepare-not-called-for-pod-deleted-while-kubelet-down.yaml": Breaker(
        "no successful prepare after the restart",
        mutation=(
            "  - stopNode:\n  - deletePod: {pod: p1}\n"
            "  - fault: {driver: gpu, clear: [prepare-block]}\n  - startNode:\n",
            "  - fault: {driver: gpu, clear: [prepare-block]}\n  - deletePod: {pod: p1}\n",
        ),
    ),
    "prepare-retried-after-kubelet-restart.yaml": Breaker(
        "pod runs after the restart", mutation=("clear: [prepare-error]", "set: {prepare-error: still on fire}")
    ),
    "prepare-times-out-pod-stays-pending.yaml": Breaker(
        "the prepare timed out", mutation=("set: {prepare-block: true}", "set: {prepare-block: false}")
    ),
    "unprepare-fails-across-kubelet-restart.yaml": Breaker(
        "checkpoint empty once the driver is mended",
        mutation=("  - fault: {driver: gpu, clear: [unprepare-error]}\n", ""),
    ),
    "unprepare-mended-while-kubelet-stopped.yaml": Breaker(
        "unprepared once the kubelet is back", mutation=("  - fault: {driver: gpu, clear: [unprepare-error]}\n", "")
    ),
    "unprepare-fails-for-one-of-two-drivers.yaml": Breaker(
        "the mended driver's claim unprepared", mutation=("  - fault: {driver: nic, clear: [unprepare-error]}\n", "")
    ),
}
