"""The kubelet's DRA manager: claims of pods prepared and unprepared through their drivers, with a checkpoint.

``DRAManager`` (``manager``) is the entry point; like the kubelet's ``cm/dra`` (manager / claiminfo /
state / plugin), the claim info cache (``claiminfo``, written by ``commit``), the checkpoint file
(``checkpoint``), the driver side (``plugin``), claim name resolution (``claims``) and the devices of
each container (``containers``) are separate modules with narrow interfaces.
"""

from kubelet_dra.kubelet.cm.dra.claiminfo import ClaimInfo, ClaimInfoCache
from kubelet_dra.kubelet.cm.dra.claims import ClaimError, PodClaim, pod_claims
from kubelet_dra.kubelet.cm.dra.manager import DEFAULT_RECONCILE_PERIOD, DRAManager, PrepareError, UnprepareError
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint, ClaimInfoState, DeviceState

__all__ = [
    "DEFAULT_RECONCILE_PERIOD",
    "Checkpoint",
    "ClaimError",
    "ClaimInfo",
    "ClaimInfoCache",
    "ClaimInfoState",
    "DRAManager",
    "DeviceState",
    "PodClaim",
    "PrepareError",
    "UnprepareError",
    "pod_claims",
]
