"""Generate the ``*_pb2*`` modules of this package from the ``.proto`` files in ``proto/``.

Run ``python -m kubelet_dra.api.codegen`` after editing a ``.proto`` file and commit the result.
grpc_tools writes sibling imports as top-level ``import x_pb2``, which only works when the output
directory is on ``sys.path``; they are rewritten to package-relative imports so the modules load
as ``kubelet_dra.api.x_pb2``. grpcio-tools is a development dependency, imported only here.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from kubelet_dra.errors import ConfigError, KubeletDRAError, UsageError

PACKAGE_DIR = Path(__file__).resolve().parent
PROTO_DIR = PACKAGE_DIR.parent.parent / "proto"
COMMAND = "python -m kubelet_dra.api.codegen"
GENERATED_GLOBS = ("*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py")

_SIBLING_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def proto_files(proto_dir: Path = PROTO_DIR) -> list[str]:
    """The ``.proto`` names relative to ``proto_dir``: they become the descriptor-pool file names."""
    names = sorted(path.name for path in proto_dir.glob("*.proto"))
    if not names:
        raise ConfigError("no .proto files found", where=str(proto_dir), fix="run from a kubelet-dra source checkout")
    return names


def generated_files(directory: Path) -> list[Path]:
    """Every generated module in ``directory``, sorted, so stale leftovers are noticed too."""
    return sorted({path for pattern in GENERATED_GLOBS for path in directory.glob(pattern)})


def generate(out_dir: Path, proto_dir: Path = PROTO_DIR) -> list[Path]:
    """Compile every ``.proto`` in ``proto_dir`` into ``out_dir``, replacing what was generated before.

    Earlier output is removed first so a renamed or deleted ``.proto`` leaves no stale module.
    Returns the files written.
    """
    try:
        from grpc_tools import protoc
    except ImportError as err:
        raise UsageError(
            "grpcio-tools is not installed", fix="pip install 'kubelet-dra[test]' (it is a development dependency)"
        ) from err
    names = proto_files(proto_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in generated_files(out_dir):
        stale.unlink()
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={proto_dir}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            *names,
        ]
    )
    if status != 0:
        raise ConfigError(f"protoc failed with exit status {status} (its message is above)", where=str(proto_dir))
    modules = {name.removesuffix(".proto") + "_pb2" for name in names}
    written = generated_files(out_dir)
    for path in written:
        path.write_text(relative_imports(path.read_text(encoding="utf-8"), modules), encoding="utf-8")
    return written


def relative_imports(source: str, modules: set[str]) -> str:
    """Turn ``import x_pb2 as y`` into ``from . import x_pb2 as y`` for modules generated alongside."""
    return _SIBLING_IMPORT.sub(
        lambda match: f"from . import {match[1]} as {match[2]}" if match[1] in modules else match[0], source
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PACKAGE_DIR, help="output directory (default: this package)")
    parser.add_argument("--proto-dir", type=Path, default=PROTO_DIR, help="directory of the .proto sources")
    args = parser.parse_args(argv)
    try:
        written = generate(args.out, args.proto_dir)
    except KubeletDRAError as err:
        print(f"{COMMAND}: error: {err}", file=sys.stderr)
        return err.exit_code
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
