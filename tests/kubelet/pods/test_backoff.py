"""The pod workers' back-off and resync: the kubelet's numbers, one name each in the CLI, scenario files and node."""

from __future__ import annotations

import random

import pytest

from kubelet_dra.cli import build_parser, load_commands
from kubelet_dra.cli.run import options
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.workbench.scenarios.loader import loads

HEADER = "apiVersion: kubelet-dra.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: t\nsteps:\n  - sleep: 0s\n"


def test_the_kubelets_numbers_back_off_10s_resync_60s_each_plus_up_to_half() -> None:
    periods = PodSyncPeriods()
    assert (periods.back_off_period, periods.sync_frequency, periods.relist_period) == (10.0, 60.0, 1.0)
    rng = random.Random(7)
    back_offs = [periods.back_off(rng) for _ in range(200)]
    resyncs = [periods.resync(rng) for _ in range(200)]
    assert min(back_offs) >= 10.0 and max(back_offs) <= 15.0 and max(back_offs) - min(back_offs) > 3
    assert min(resyncs) >= 60.0 and max(resyncs) <= 90.0 and max(resyncs) - min(resyncs) > 20


def test_a_node_given_only_a_back_off_resyncs_after_six_of_them() -> None:
    assert PodSyncPeriods(back_off_period=0.5).sync_frequency == 3.0
    assert PodSyncPeriods(back_off_period=0.5, sync_frequency=0.5).sync_frequency == 0.5


def test_scenario_keys_are_the_kubelets_names() -> None:
    scenario = loads(HEADER + "timing: {podBackOffPeriod: 2s, syncFrequency: 5s}\n", "s.yaml")
    assert scenario.node.options.pod_sync == PodSyncPeriods(back_off_period=2.0, sync_frequency=5.0)


def test_an_old_scenario_key_still_works_and_the_warning_names_the_new_one(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = loads(HEADER + "timing: {podRetryPeriod: 2s, podResyncPeriod: 5s}\n", "old.yaml")
    assert scenario.node.options.pod_sync == PodSyncPeriods(back_off_period=2.0, sync_frequency=5.0)
    err = capsys.readouterr().err
    assert "old.yaml:7:10: timing.podRetryPeriod is deprecated, use timing.podBackOffPeriod" in err, err
    assert "timing.podResyncPeriod is deprecated, use timing.syncFrequency" in err, err


def _run_options(*flags: str) -> PodSyncPeriods:
    args = build_parser(load_commands(["run"])).parse_args(["run", "--node-name", "n", *flags])
    return options(args).pod_sync


def test_cli_flags_are_the_kubelets_names_and_old_flags_still_work(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run_options() == PodSyncPeriods()
    assert _run_options("--pod-back-off-period", "2") == PodSyncPeriods(back_off_period=2.0, sync_frequency=12.0)
    assert _run_options("--sync-frequency", "5") == PodSyncPeriods(back_off_period=10.0, sync_frequency=5.0)
    assert capsys.readouterr().err == ""
    assert _run_options("--pod-retry-period", "2", "--pod-resync-period", "5") == PodSyncPeriods(2.0, 5.0)
    err = capsys.readouterr().err
    assert "--pod-retry-period is deprecated, use --pod-back-off-period" in err, err
    assert "--pod-resync-period is deprecated, use --sync-frequency" in err, err
