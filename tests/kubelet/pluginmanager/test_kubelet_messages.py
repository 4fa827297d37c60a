"""The catalogue of the kubelet's DRA messages: each entry recognises its own line, the page is current, the
lines a newcomer met are explained with the right cause first, and an unknown DRA line still gets a next step."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kubelet_dra

from kubelet_dra.workbench.debug.catalogue import MESSAGES, PAGE, find
from kubelet_dra.workbench.debug.catalogue.page import render
from kubelet_dra.workbench.debug.explain import UNKNOWN, explain

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: f"{message.mode}-{message.key}")
def test_each_entry_explains_its_own_line_and_says_where_why_and_what_next(message) -> None:
    assert find(message.example) is message  # no earlier entry takes its line
    assert message.causes and message.fix and message.title
    assert message.more.startswith(("kubelet-dra ", "kubectl "))
    assert message.releases and all(source.file.startswith(("pkg/", "vendor/")) for source in message.sources)


def test_keys_are_unique() -> None:
    keys = [message.anchor for message in MESSAGES]
    assert len(keys) == len(set(keys))


def test_the_page_in_docs_is_generated_from_the_catalogue() -> None:
    page = REPO / PAGE
    assert page.read_text() == render(), f"{PAGE} is stale: run kubelet-dra explain --catalogue > {PAGE}"


@pytest.mark.parametrize(
    ("line", "mode", "first_cause"),
    [
        (
            '"Error receiving from WatchResources stream" err="rpc error: code = Unavailable desc = connection error"',
            "F21",
            "the driver process stopped, crashed or restarted",
        ),
        (
            "NodePrepareResources failed: rpc error: code = DeadlineExceeded desc = context deadline exceeded",
            "F25",
            "the driver's prepare waits on something slow",
        ),
        (
            "NodePrepareResources failed for claim default/demo-gpu: device gpu-0 is busy",
            "F27",
            "the device cannot be set up now",
        ),
        (
            "failed to prepare dynamic resources: DRA driver gpu.example.com is not registered",
            "F12",
            "the driver's kubelet plugin does not run on this node",
        ),
    ],
)
def test_the_lines_a_newcomer_met_are_explained_with_the_most_frequent_cause_first(
    line: str, mode: str, first_cause: str
) -> None:
    (item,) = explain([line])
    assert item.mode == mode
    assert item.causes[0].startswith(first_cause)
    assert item.more.startswith("kubelet-dra ")


def test_the_same_stream_error_with_unimplemented_is_the_harmless_missing_health_service() -> None:
    (item,) = explain(['"Error receiving from WatchResources stream" err="rpc error: code = Unimplemented desc = x"'])
    assert (item.mode, item.harmless) == ("F13", True)


def test_an_unknown_dra_error_line_gets_its_source_and_a_next_step_and_info_noise_is_left_out() -> None:
    lines = [
        'E1127 10:02:11.120001     512 healthinfo.go:99] "Brand new trouble" err="x"',
        'I1127 10:02:11.120001     512 dra_plugin.go:120] "Calling NodePrepareResources rpc" request="…"',
        'I1127 10:02:11.120001     512 dra_plugin.go:131] "Done calling NodeUnprepareResources rpc" response="…"',
        'E1127 10:02:11.120001     512 kubelet.go:2100] "Something about a ResourceClaim went wrong"',
        'E1127 10:02:11.120001     512 kubelet_node_status.go:99] "Error updating node status, will retry"',
        'E1127 10:02:11.120001     512 kubelet_pods.go:1944] "Pod attempted illegal phase transition"'
        ' apiStatus="&PodStatus{ResourceClaimStatuses:[]PodResourceClaimStatus{},Claims:[]ResourceClaim{}}"',
    ]
    first, second = explain(lines)
    assert (first.line, first.mode, first.source) == (1, UNKNOWN, "healthinfo.go:99")
    assert (second.line, second.mode, second.source) == (4, UNKNOWN, "kubelet.go:2100")
    assert first.fix.startswith("run kubelet-dra debug") and first.link == PAGE


FIXTURES = REPO / "tests" / "fixtures" / "kubelet-1.36"
"""The real kubelet 1.36.2's own lines (docs/explain.md, "Held to the real kubelet"): dra-lines/ holds every
warning and error line naming DRA, a driver, a claim or a plugin socket, and every Warning pod event of them, from
the interop tier's real-kubelet runs (normalized: times, pids, work dirs, UIDs; repeats dropped)."""
REAL_LINES = [
    pytest.param(line, id=f"{path.stem}:{number}")
    for path in sorted([*FIXTURES.glob("dra-lines/*.log"), FIXTURES / "registration-failures.log"])
    for number, line in enumerate(path.read_text().splitlines(), start=1)
]


@pytest.mark.parametrize("line", REAL_LINES)
def test_every_dra_line_of_the_real_kubelet_is_explained(line: str) -> None:
    (item,) = explain([line])
    assert item.known, f"not in the catalogue: {line}"


async def test_a_failure_mode_s_entries_print_without_a_clone_and_an_unknown_mode_is_one_line() -> None:
    """``explain`` and ``debug`` point at ``explain --mode F12``: what the page says of F12, for a wheel's user."""
    code, out, err = await kubelet_dra("explain", "--mode", "f12")
    assert code == 0, err
    entries = [message for message in MESSAGES if message.mode == "F12"]
    assert entries and all(f'<a id="{message.anchor}"></a>' in out for message in entries)
    assert all(section in (REPO / PAGE).read_text() for section in out.split("<a id=")[1:])
    code, out, err = await kubelet_dra("explain", "--mode", "F99")
    assert code == 2
    assert err.splitlines() == ["kubelet-dra: error: --mode F99: no such failure mode (fix: give one of F1-F40)"]
    code, out, _ = await kubelet_dra("explain", "DRA driver gpu.example.com is not registered")
    assert "kubelet-dra explain --mode F12" in out
