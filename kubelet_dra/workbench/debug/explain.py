"""Explain kubelet and driver log lines: which catalogued message each is, what it means and what to do.

Node engineers have a log, not a live node. The kubelet's texts are precise but cryptic (a
validation error arrives behind "failed to send error", which does not mean the notification
failed); each recognised line gets its entry of the catalogue. A warning or error line that
looks like the kubelet's DRA code (its source file, logger or words) but is in no entry is still
shown, with its source location and what to run next.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from kubelet_dra.workbench.debug.catalogue import PAGE, find

MISLEADING_PREFIX = "failed to send error"
PREFIX_NOTE = (
    '"failed to send error" does not mean the notification failed: the kubelet rejected the plugin and told'
    " it why (RegistrationStatus.error); the reason follows"
)
UNKNOWN = "?"
UNKNOWN_SYMPTOM = "a kubelet DRA line that is not in the catalogue"
UNKNOWN_NEXT = (
    "run kubelet-dra debug --registry-dir <the kubelet's plugins_registry> on the node: it shows each driver's"
    " registration, connection, wipes and calls; read the kubelet source at the location shown; the catalogue"
    f" is {PAGE}"
)
KLOG_HEADER = re.compile(r"^(?P<level>[IWEF])\d{4} [\d:.]+(?:\s+\d+)? (?P<file>[\w.-]+\.go):(?P<line>\d+)\] ")
DRA_FILES = frozenset(
    {
        "dra_plugin.go",
        "dra_plugin_manager.go",
        "claiminfo.go",
        "healthinfo.go",
        "state_checkpoint.go",
        "plugin_watcher.go",
        "operation_generator.go",
    }
)
DRA_WORDS = re.compile(
    r"\bDRA\b|dra-manager|dynamic resources|\bResourceClaim\b(?!\{)|\bResourceSlices?\b(?!\{)"
    r"|Node(?:Un)?[Pp]repareResources|WatchResources"
    r"|DRAPlugin|RegisterPlugin|plugins_registry|dra_manager_state|dra_health_state|resource\.k8s\.io|kubeletplugin"
    r"|driverName=|pluginName=|-reg\.sock|dra\.sock|/plugins/"
)

PROBLEM_WORDS = re.compile(r"error|fail|unable|cannot|could not|not found|refused|invalid|timed? ?out", re.IGNORECASE)


@attrs.frozen
class Explanation:
    line: int
    text: str
    mode: str
    """The failure mode (``F1`` …), or ``?`` for a DRA line the catalogue does not know."""
    symptom: str
    fix: str
    note: str = ""
    key: str = ""
    causes: tuple[str, ...] = ()
    more: str = ""
    """The kubelet-dra command that shows more."""
    source: str = ""
    """Where the kubelet writes it: the catalogue's locations, or the line's own klog header for an unknown line."""
    link: str = ""
    harmless: bool = False

    @property
    def known(self) -> bool:
        return self.mode != UNKNOWN

    def to_json(self) -> dict[str, object]:
        return {**attrs.asdict(self), "causes": list(self.causes), "known": self.known}


def explain(lines: Iterable[str]) -> list[Explanation]:
    """One explanation per line that holds a catalogued message or looks like an unknown DRA problem, in order."""
    found = []
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\n")
        if (item := _explain_line(number, text)) is not None:
            found.append(item)
    return found


def _explain_line(number: int, text: str) -> Explanation | None:
    header = KLOG_HEADER.match(text)
    message = find(text)
    if message is not None:
        return Explanation(
            number,
            text,
            message.mode,
            message.title,
            message.fix,
            PREFIX_NOTE if MISLEADING_PREFIX in text else "",
            key=message.key,
            causes=message.causes,
            more=message.more,
            source="; ".join(f"{s.where} [{s.level}]" for s in message.sources),
            link=f"{PAGE}#{message.anchor}",
            harmless=message.harmless,
        )
    if header is not None and header["level"] == "I":
        return None  # the kubelet's info lines are its narrative; only the catalogued ones read like problems
    if not _looks_like_dra(text, header):
        return None
    where = f"{header['file']}:{header['line']}" if header else "unknown (no klog header in the line)"
    return Explanation(number, text, UNKNOWN, UNKNOWN_SYMPTOM, UNKNOWN_NEXT, source=where, link=PAGE)


def _looks_like_dra(text: str, header: re.Match[str] | None) -> bool:
    """A DRA problem line: a warning or error of the kubelet's DRA code, or (no klog header: a pasted message, an
    event of kubectl describe) DRA words together with words of a failure."""
    if header is not None and header["file"] in DRA_FILES:
        return True
    if header is None and not PROBLEM_WORDS.search(text):
        return False
    return DRA_WORDS.search(text) is not None
