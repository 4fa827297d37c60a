"""The node played by a real kubelet process: its runtime, configuration and restarts, and a testbed around it."""

from kubelet_dra.workbench.realnode.realbed import RealTestbed
from kubelet_dra.workbench.realnode.realkubelet import RealKubelet, RealKubeletOptions

__all__ = ["RealKubelet", "RealKubeletOptions", "RealTestbed"]
