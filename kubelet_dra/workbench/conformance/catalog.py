"""The checks as the docs show them: their count and the table of every check, written from the checks themselves.

``python -m kubelet_dra.workbench.conformance.catalog FILE...`` rewrites the generated parts of the given Markdown
files in place (``--check``: only says which are out of date, exit 1; a table missing one of its markers is
exit 2); a test runs the check on the README and ``docs/``, so the docs cannot drift from the code.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import LEVELS, MUST, SHOULD, Check

TABLE_START = (
    "<!-- the check table: generated from the checks (python -m kubelet_dra.workbench.conformance.catalog) -->"
)
TABLE_END = "<!-- end of the check table -->"
_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_NAMED = re.compile(r"\b\d+ named checks\b")
_SUMMARY = re.compile(r"\b\d+ checks in \w+ groups: \d+ `must`, \d+ `should`")


def summary(checks: Sequence[Check]) -> str:
    """``67 checks in eight groups: 49 `must`, 18 `should```: the groups are the id prefixes."""
    groups = len({check.id.split("-")[0] for check in checks})
    count = {level: sum(check.level == level for check in checks) for level in LEVELS}
    word = _WORDS[groups] if groups < len(_WORDS) else str(groups)
    return f"{len(checks)} checks in {word} groups: {count[MUST]} `must`, {count[SHOULD]} `should`"


def table(checks: Sequence[Check]) -> str:
    """Every check: id, level, title, the sentence it enforces (where) and why its level is what it is."""
    lines = [
        "| id | level | what it checks | the sentence it enforces (where) | why this level |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| `{check.id}` | {check.level} | {check.title} | {check.rule} | {check.why} |"
        for check in sorted(checks, key=lambda check: check.id)
    ]
    return "\n".join(lines)


class MarkerMissing(ValueError):
    """A page has one marker of the check table without the other: the table would go unchecked."""


def updated(text: str, checks: Sequence[Check]) -> str:
    """``text`` with its counts and its generated table (between the markers) as the checks say."""
    text = _NAMED.sub(f"{len(checks)} named checks", text)
    text = _SUMMARY.sub(summary(checks), text)
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 and end < 0:
        return text
    if start < 0 or end < start:
        missing, where = (TABLE_START, "before its header") if start < 0 else (TABLE_END, "after its last row")
        raise MarkerMissing(f"the check table lacks its marker {missing}: add it on a line of its own {where}")
    return text[: start + len(TABLE_START)] + "\n" + table(checks) + "\n" + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubelet_dra.workbench.conformance.catalog", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="Markdown files to rewrite")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a file is out of date")
    args = parser.parse_args(argv)
    checks = all_checks()
    stale = []
    for path in args.files:
        text = path.read_text(encoding="utf-8")
        try:
            new = updated(text, checks)
        except MarkerMissing as err:
            print(f"{path}: {err}", file=sys.stderr)
            return 2
        if new != text:
            stale.append(str(path))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "out of date" if args.check else "rewritten"
    for path in stale:
        print(f"{path}: {verb}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
