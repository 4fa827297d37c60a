"""The registration debugger on a real node: real drivers over Unix sockets, real sockets left lying around,
and the embedded API server holding the names the cluster uses."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubelet_dra.kubelet.pluginmanager import SocketPhase, SocketState
from kubelet_dra.kubelet.pluginmanager.diagnosis import diagnose
from kubelet_dra.peers.kube.client import KubeClient, api_path
from kubelet_dra.workbench.debug import DebugSession, Liveness, Report, inventory
from kubelet_dra.workbench.debug.timeline import Event, Snapshot, Timeline, changes

from .support import FakeClock, TinyDriver

DriverFactory = Callable[..., TinyDriver]
GONE = "https://127.0.0.1:1"
"""An API server address where nothing listens."""


async def settled(session: DebugSession, holds: Callable[[Report], object], timeout: float = 10.0) -> Report:
    """Update the session until its report satisfies ``holds``; that report."""
    for _ in range(int(timeout / 0.05)):
        await session.update(0.05)
        report = session.report()
        if holds(report):
            return report
    raise AssertionError(f"never held; last report: {session.report()}")


def phases(report: Report) -> dict[str, SocketPhase]:
    return {state.socket_path: state.phase for state in report.sockets}


def problems(report: Report) -> dict[str, tuple[str, str]]:
    return {problem.subject: (problem.mode, problem.text) for problem in report.problems()}


@pytest.fixture
def listening(tmp: Path) -> Iterator[Callable[[Path], None]]:
    """Make a socket at a path that something listens on, for the test's duration."""
    servers: list[socket.socket] = []

    def listen(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen()
        servers.append(server)

    yield listen
    for server in servers:
        server.close()


def stale(path: Path) -> None:
    """A socket file whose process is gone: bound, never listened on, closed, left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))


async def test_a_rejected_driver_is_explained_next_to_a_registered_one(
    node_factory, make_driver: DriverFactory, clock: FakeClock
):
    good = make_driver("gpu.example.com")
    bad = make_driver("nic.example.com", plugin_type="CSIPlugin")
    async with node_factory() as node:
        session = DebugSession(node, api_server="none", clock=clock.time)
        await good.start()
        await bad.start()
        report = await settled(
            session,
            lambda r: (
                phases(r)
                == {
                    str(good.registration_socket): SocketPhase.REGISTERED,
                    str(bad.registration_socket): SocketPhase.BACKOFF,
                }
                and any(i.connected for i in r.instances)
            ),
        )
        (instance,) = report.instances
        assert (instance.driver, instance.service, instance.connectivity) == (
            "gpu.example.com",
            "v1.DRAPlugin",
            "READY",
        )

        (problem,) = report.problems()
        assert (problem.subject, problem.mode) == (str(bad.registration_socket), "F4")
        # the real kubelet 1.36.2 hands a CSIPlugin to its CSI handler, which cannot parse DRA service names
        assert problem.message == (
            "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver"
            f" nic.example.com at endpoint {bad.service_socket}: kubernetes.io/csi: ValidatePlugin for CSI driver"
            ' "nic.example.com" failed. None of the versions specified ["v1.DRAPlugin" "v1beta1.DRAPlugin"] are'
            " supported. err=could not find a highest supported version from versions ([v1.DRAPlugin"
            ' v1beta1.DRAPlugin]) reported: illegal version string "v1.DRAPlugin"'
        )
        assert problem.fix == 'set PluginInfo.type to exactly "DRAPlugin"'
        texts = [event.text for event in report.events]
        registered = f"registered DRA driver gpu.example.com with endpoint {good.service_socket}"
        assert any(text.endswith(registered) for text in texts), texts
        assert any(text.endswith("READY") for text in texts), "the connection coming up is on the timeline"

        await clock.advance(1)  # the next attempt fails the same way: one timeline line, counted twice
        await bad.until(lambda: bad.get_info_calls >= 2)
        report = await settled(session, lambda r: any(e.repeats == 2 for e in r.events))
        (f4,) = [event for event in report.events if event.text.startswith("F4")]
        assert f4.problem and f4.last_at == clock.time()


async def test_stale_hidden_and_misplaced_sockets_are_found_and_explained(
    node_factory, registry: Path, tmp: Path, listening
):
    dead = registry / "old.example.com-reg.sock"
    hidden = registry / ".gpu.example.com-reg.sock"
    misplaced = tmp / "root-old" / "plugins_registry" / "gpu.example.com-reg.sock"
    service = tmp / "root-old" / "plugins" / "gpu" / "dra.sock"
    stale(dead)
    listening(hidden)
    listening(misplaced)
    listening(service)
    async with node_factory() as node:
        session = DebugSession(node, api_server="none", elsewhere=[str(tmp / "root-old")])
        report = await settled(session, lambda r: str(dead) in problems(r) and r.found)

    found = {item.path: item for item in report.found}
    assert (found[str(dead)].liveness, found[str(dead)].detail) == (Liveness.DEAD, "Connection refused")
    assert found[str(hidden)].liveness is Liveness.LIVE and found[str(hidden)].in_registry
    assert found[str(misplaced)].liveness is Liveness.LIVE and not found[str(misplaced)].in_registry
    explained = problems(report)
    assert explained[str(dead)][0] == "F2", "nothing listens: every attempt fails in the dial"
    assert explained[str(hidden)] == ("F1", "the name starts with '.', so the kubelet ignores the socket")
    assert explained[str(misplaced)][0] == "F1"
    assert f"outside the watched dir {registry}" in explained[str(misplaced)][1]
    assert str(service) in found and str(service) not in explained, "a service socket elsewhere is no problem"


async def test_a_service_connection_that_never_comes_up_shows_the_wipe_coming(
    node_factory, make_driver: DriverFactory, tmp: Path, kubeconfig: str, clock: FakeClock
):
    driver = make_driver(endpoint=str(tmp / "nowhere" / "dra.sock"))
    async with node_factory(kubeconfig=kubeconfig) as node:
        session = DebugSession(node, api_server="embedded", clock=clock.time)
        await driver.start()
        report = await settled(session, lambda r: r.instances and r.wipes)
    subject = f"{driver.name} {tmp / 'nowhere' / 'dra.sock'}"
    mode, text = problems(report)[subject]
    assert mode == "F10"
    assert text.startswith("registered, but its service connection is ")
    assert text.endswith("its ResourceSlices are wiped in 30 s")
    (problem,) = [p for p in report.problems() if p.subject == subject]
    assert problem.message == (  # what the real kubelet 1.36.2 logs for it at once, 30 s before the wipe
        '"NodeWatchResources RPC call failed" err="rpc error: code = Unavailable desc = connection error: desc ='
        f' \\"transport: Error while dialing: dial unix {tmp}/nowhere/dra.sock: connect: no such file or directory\\""'
    )


async def test_driver_names_the_cluster_uses_but_nobody_registered(
    node_factory, make_driver: DriverFactory, kubeconfig: str
):
    driver = make_driver("gpu.example.com")
    kube = KubeClient.from_kubeconfig(kubeconfig)
    slices = api_path("resource.k8s.io", "v1", "resourceslices")
    typo = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "typo-slice"},
        "spec": {
            "driver": "gpu.exmaple.com",
            "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev-0"}],
        },
    }
    try:
        await kube.request("POST", slices, body=typo)
        # As against a real cluster: the start-up wipe only counts the node's slices.
        async with node_factory(kubeconfig=kubeconfig, dry_run_wipes=True) as node:
            session = DebugSession(node, api_server="embedded")
            await driver.start()
            counted = "would delete 1 ResourceSlice(s) (spec.nodeName=node-1); dry run"
            await settled(
                session,
                lambda r: any(i.connected for i in r.instances) and any(e.text == counted for e in r.events),
            )
            await session.scan()
            report = session.report()
    finally:
        kube.close()
    (mismatch,) = report.names
    assert (mismatch.driver, mismatch.used_by, mismatch.closest) == (
        "gpu.exmaple.com",
        "ResourceSlice typo-slice",
        "gpu.example.com",
    )
    assert problems(report)["gpu.exmaple.com"] == (
        "F12",
        "ResourceSlice typo-slice names DRA driver gpu.exmaple.com, which is not registered",
    )


def test_inventory_probes_each_socket_once_and_skips_other_files(tmp: Path, listening):
    listening(tmp / "reg" / "a-reg.sock")
    stale(tmp / "reg" / "sub" / "b-reg.sock")
    (tmp / "reg" / "c-reg.sock").write_text("not a socket")
    found = inventory(str(tmp / "reg"), [str(tmp)])
    assert [(Path(f.path).name, f.liveness, f.in_registry) for f in found] == [
        ("a-reg.sock", Liveness.LIVE, True),
        ("b-reg.sock", Liveness.DEAD, True),
    ]


def test_timeline_counts_a_repeated_event_instead_of_adding_a_line():
    timeline = Timeline(keep=3)
    first = Event(1.0, "/r/a.sock", "F3 GetInfo fails", True)
    assert timeline.add([first, Event(2.0, "/r/b.sock", "registered")]) == [
        first,
        Event(2.0, "/r/b.sock", "registered"),
    ]
    assert timeline.add([Event(3.0, "/r/a.sock", "F3 GetInfo fails", True)]) == []
    assert timeline.events[0] == Event(1.0, "/r/a.sock", "F3 GetInfo fails", True, repeats=2, last_at=3.0)
    timeline.add([Event(4.0, "/r/a.sock", "registered"), Event(5.0, "/r/c.sock", "registered")])
    assert [event.at for event in timeline.events] == [2.0, 4.0, 5.0], "only the latest events are kept"


def test_a_failure_seen_with_its_socket_folds_with_its_repeats():
    """However late the first snapshot comes, a socket failing the same way at every retry is one line."""
    diagnosis = diagnose("F4", socket="/r/a.sock", cause="type 'CSIPlugin'", message="no handler")
    failing = [SocketState("/r/a.sock", SocketPhase.BACKOFF, retry_at=at, diagnosis=diagnosis) for at in (2, 4)]
    states = [
        Snapshot(at, {} if state is None else {"/r/a.sock": state}, {}, {}, (), ())
        for at, state in ((0.0, None), (1.0, failing[0]), (3.0, failing[1]))
    ]
    timeline = Timeline()
    for before, after in itertools.pairwise(states):
        timeline.add(changes(before, after))
    assert [(event.text.split(" ")[0], event.repeats, event.last_at) for event in timeline.events] == [
        ("registration", 1, None),
        ("F4", 2, 3.0),
    ]


async def test_an_empty_registry_dir_and_an_unknown_node_name_are_problems(
    node_factory, kubeconfig: str, registry: Path
):
    async with node_factory(kubeconfig=kubeconfig, register_node=False, dry_run_wipes=True) as node:
        session = DebugSession(node, api_server="a real cluster")
        await session.scan()
        report = session.report()
    empty, unknown = report.problems()
    assert (empty.subject, empty.mode, empty.text) == (
        str(registry),
        "F1",
        "no registration socket in the watched dir: no driver can register",
    )
    assert (unknown.subject, unknown.mode) == ("node-1", "setup")
    assert unknown.fix == "pass --node-name as the cluster names this node (kubectl get nodes)"


async def test_an_unreachable_api_server_is_a_setup_problem_and_registration_goes_on(
    node_factory, make_driver: DriverFactory, tmp: Path, apiserver
):
    gone = tmp / "gone.kubeconfig"
    gone.write_text(apiserver.kubeconfig(tmp / "admin.kubeconfig").read_text().replace(apiserver.url, GONE))
    kubeconfig = str(gone)
    driver = make_driver()
    async with node_factory(kubeconfig=kubeconfig, register_node=False) as node:
        session = DebugSession(node, api_server="gone")
        await driver.start()
        report = await settled(
            session,
            lambda r: (
                r.api_error
                and phases(r) == {str(driver.registration_socket): SocketPhase.REGISTERED}
                and all(i.connected for i in r.instances)
            ),
        )
    (problem,) = report.problems()
    assert (problem.subject, problem.mode) == ("gone", "setup")
    assert problem.text.startswith("cannot read the API server: ")
