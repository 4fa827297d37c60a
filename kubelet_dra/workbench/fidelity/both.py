"""``replay --compare``: one scenario replayed on the simulated node, then on the real kubelet, traced alike.

A file that prepares or unprepares by hand is replayed on the real kubelet's DRA manager instead when the options
name one (``ReplayOptions.real_manager``): no kubelet can be told to do those steps.

Each side runs on its own fresh testbed (its own embedded API server; the real kubelet's on the
``--kubeconfig`` cluster when one is given), with the same scenario file, drivers and faults; the
simulated node plays the real kubelet's release. The comparison is accepted when both replays held and every
column is identical or differs only as ``kubelet_dra.workbench.fidelity.known`` says.
"""

from __future__ import annotations

from typing import Any

import attrs

from kubelet_dra.kubelet.release import release
from kubelet_dra.workbench.fidelity.columns import Trace
from kubelet_dra.workbench.fidelity.comparison import DIFFERS, REAL, REAL_MANAGER, ColumnResult, compare
from kubelet_dra.workbench.fidelity.settle import bound
from kubelet_dra.workbench.fidelity.trace import Tracer
from kubelet_dra.workbench.realnode import RealKubeletOptions
from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios.model import Scenario
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, ScenarioResult, replay
from kubelet_dra.workbench.scenarios.replayreport import to_json

KUBELET_TIMING = "kubelet"
"""One clock: kubelet-dra runs with the real kubelet's constants and deadlines (the default)."""
FILE_TIMING = "file"
"""The faster mode: kubelet-dra runs with the file's ``timing``; background work differs between the sides."""
TIMINGS = (KUBELET_TIMING, FILE_TIMING)


@attrs.frozen
class Comparison:
    """One scenario on both nodes: each replay's result and trace, and the columns compared."""

    simulated: ScenarioResult
    real: ScenarioResult
    simulated_trace: Trace
    real_trace: Trace
    columns: tuple[ColumnResult, ...]
    oracle: str = REAL
    """What played the node on the other side: the real kubelet, or the real DRA manager for a by-hand file."""

    @property
    def accepted(self) -> bool:
        return self.simulated.passed and self.real.passed and all(c.verdict != DIFFERS for c in self.columns)

    def to_json(self) -> dict[str, Any]:
        replays = to_json([self.simulated, self.real])["scenarios"]
        return {
            "name": self.real.name,
            "path": self.real.path,
            "accepted": self.accepted,
            "oracle": self.oracle,
            "columns": [column.to_json() for column in self.columns],
            "simulated": {**replays[0], "trace": self.simulated_trace.to_json()},
            "real": {**replays[1], "trace": self.real_trace.to_json()},
        }


async def replay_both(
    scenario: Scenario,
    real: RealKubeletOptions,
    options: ReplayOptions,
    *,
    release_name: str,
    timing: str = KUBELET_TIMING,
) -> Comparison:
    """Replay ``scenario`` on kubelet-dra as kubelet ``release_name``, then on ``real``; compare the traces, each
    ending at the node's settled point after the last step. ``timing``: whose clock kubelet-dra runs on."""
    ours = scenario.on(release(release_name))
    if timing == KUBELET_TIMING:
        ours = realkubelet.on_kubelet_clock(ours)
    simulated_tracer = Tracer(settle=bound(ours.node.options.wiping_delay))
    real_tracer = Tracer(settle=bound(realkubelet.REAL_TIMING["wiping_delay"][1]))
    simulated = await replay(ours, attrs.evolve(options, real_kubelet=None, observe=simulated_tracer.observe))
    on_real = await replay(scenario, attrs.evolve(options, real_kubelet=real, observe=real_tracer.observe))
    oracle = REAL_MANAGER if options.real_manager is not None and realkubelet.by_hand(scenario) else REAL
    return Comparison(
        simulated,
        on_real,
        simulated_tracer.trace,
        real_tracer.trace,
        compare(scenario.name, simulated_tracer.trace, real_tracer.trace, real=oracle),
        oracle,
    )
