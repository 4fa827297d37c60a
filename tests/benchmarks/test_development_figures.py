"""The figures docs/development.md states about the suite's time and coverage are those the measuring commands wrote."""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
RUN = "the simulated kubelet's run command"


def section(title: str) -> str:
    """The text of one ``## `` section of docs/development.md, without line breaks."""
    text = (REPO / "docs" / "development.md").read_text()
    body = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return " ".join(body.split())


def results(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def suite_figures() -> list[str]:
    suite, execd = results("suite_time.json"), results("suite_time-exec.json")
    driver = execd["kinds"]["kubelet_dra.__main__ driver"]
    forked = suite["kinds"]["kubelet_dra.__main__ driver (forked)"]
    commands = {name: row for name, row in suite["kinds"].items() if name.endswith("(forked)") and row is not forked}
    before, after = results("process_starts-before.json")["cpu_s"], results("process_starts.json")["cpu_s"]
    plain, covered = results("suite_time-kubelet.json"), results("suite_time-kubelet-cov.json")
    interop = results("interop_time.json")
    interop_summary = re.search(r"\d+ passed, \d+ skipped", interop["summary"])[0]
    (longest, longest_s), (second, second_s) = list(suite["files"].items())[:2]
    return [
        f"`{longest.split('/')[-1]}` {longest_s:.1f} s, `{second.split('/')[-1]}` {second_s:.1f} s",
        f"interop tier (`interop_time.json`): {interop_summary}",
        f"{interop['wall_s']:.1f} s of wall, {interop['cpu_s']:.1f} s of CPU",
        re.search(r"\d+ passed, \d+ skipped", suite["summary"])[0],
        f"{suite['cpu_s']:.1f} s of CPU, {suite['wall_s']:.1f} s of wall",
        f"{suite['workers_own_cpu_s']:.1f} s of the CPU is the pytest workers' own",
        f"{suite['workers_children_cpu_s']:.1f} s the processes they start",
        f"{suite['processes_started']} Python processes, {suite['processes_forked']} of them forked",
        f"{forked['started']} forked starts of the reference driver, {forked['cpu']:.1f} s of CPU",
        f"{sum(row['started'] for row in commands.values())} forked `kubelet-dra` commands",
        f"{execd['cpu_s']:.1f} s of CPU and {execd['wall_s']:.1f} s of wall on four workers",
        f"{driver['started']} exec'd starts, {driver['cpu']:.1f} s of CPU,"
        f" {driver['cpu'] / driver['exited']:.2f} s each",
        f"`kubernetes` client at its start ({before['the kubernetes client']:.2f} s of CPU alone",
        f"its whole import was {before['the reference driver (plugin)']:.2f} s",
        f"its whole import is {after['the reference driver (plugin)']:.2f} s (`process_starts.json`",
        f"the `kubernetes` client alone measured {after['the kubernetes client']:.2f} s",
        f"from {before[RUN]:.2f} s to {after[RUN]:.2f} s",
        *(f"`{t['test'].split('::')[-1]}` ({t['phase']}), {t['seconds']:.1f} s" for t in suite["slowest"][:3]),
        f"{plain['cpu_s']:.1f} s of CPU without",
        f"{covered['cpu_s']:.1f} s with",
    ]


def coverage_figures() -> list[str]:
    coverage = results("coverage.json")
    figures = [f"{coverage['total']:.1f} % in all"]
    packages = {name.split("/", 1)[1]: percent for name, percent in coverage["packages"].items() if "/" in name}
    figures += [f"`{name}/` {percent:.1f} %" for name, percent in packages.items()]
    figures += [f"`{name.split('/', 1)[1]}` ({entry['percent']:.1f} %" for name, entry in coverage["worst"].items()]
    return figures


def test_the_time_figures_come_from_a_run_without_failures():
    """A failing run's time is no figure of the suite's: the page is regenerated from a green run."""
    for name in ("suite_time.json", "interop_time.json"):
        assert not results(name).get("problems"), name
        assert " failed" not in results(name)["summary"] and " error" not in results(name)["summary"], name


@pytest.mark.parametrize("figure", suite_figures())
def test_the_time_figures_are_the_measured_ones(figure: str):
    assert figure in section("Where the suite's time goes")


@pytest.mark.parametrize("figure", coverage_figures())
def test_the_coverage_figures_are_the_measured_ones(figure: str):
    assert figure in section("Coverage")


def test_the_coverage_floor_holds_under_the_measured_figure_and_close_to_it():
    """A change that lowers coverage fails, and today's suite passes."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    floor = float(re.search(r"--cov-fail-under=([0-9.]+)", tox["testenv"]["commands"])[1])
    measured = results("coverage.json")["total"]
    assert measured - 1.0 <= floor < measured
