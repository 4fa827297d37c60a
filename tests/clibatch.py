"""Run ``kubelet-dra`` once per command line read from stdin (a JSON list of argument lists), in this one process.

What each run printed and its exit code go to stdout as JSON, as separate processes would have shown them: a usage
error's exit 2 and its one line, or the traceback of an error nobody caught. Cases that differ only in their flags
pay for one interpreter start instead of one each (``helpers.kubelet_dra_each``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback

from kubelet_dra.cli import main


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        except Exception:  # what the interpreter would print for an error main() let through
            traceback.print_exc()
            code = 1
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":
    json.dump([run(argv) for argv in json.load(sys.stdin)], sys.__stdout__)
