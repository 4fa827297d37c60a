"""The node played by a real kubelet process (its runtime, configuration and restarts) or by the real kubelet's DRA
manager (``dra-manager-harness``), and a testbed around each."""

from kubelet_dra.workbench.realnode.managerbed import ManagerTestbed, RealManagerOptions
from kubelet_dra.workbench.realnode.realbed import RealTestbed
from kubelet_dra.workbench.realnode.realkubelet import RealKubelet, RealKubeletOptions

__all__ = ["ManagerTestbed", "RealKubelet", "RealKubeletOptions", "RealManagerOptions", "RealTestbed"]
