"""Generate the ``*_pb2*`` modules from the ``.proto`` files in ``proto/``.

Two trees: ``proto/*.proto`` (the kubelet's gRPC APIs) become ``kubelet_dra/peers/api/`` with gRPC stubs;
``proto/k8s/*.proto`` (the Kubernetes API types the embedded API server speaks in protobuf) become
``kubelet_dra/peers/kubeproto/``, messages only. Run ``python -m kubelet_dra.peers.api.codegen`` after editing a
``.proto`` file and commit the result. grpc_tools writes sibling imports as top-level
``import x_pb2`` (or ``from k8s import x_pb2``), which only works when the output directory is on
``sys.path``; they are rewritten to package-relative imports so the modules load as
``kubelet_dra.peers.api.x_pb2`` and ``kubelet_dra.peers.kubeproto.x_pb2``. grpcio-tools is a development
dependency, imported only here.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kubelet_dra.peers.errors import ConfigError, KubeletDRAError, UsageError

PACKAGE_DIR = Path(__file__).resolve().parent
KUBEPROTO_DIR = PACKAGE_DIR.parent / "kubeproto"
PROTO_DIR = next((up / "proto" for up in PACKAGE_DIR.parents if (up / "proto").is_dir()), PACKAGE_DIR / "proto")
"""The source checkout's ``proto/`` (the nearest one above this package, wherever the package sits in the tree)."""
KUBE_SUBDIR = "k8s"
COMMAND = "python -m kubelet_dra.peers.api.codegen"
GENERATED_GLOBS = ("*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py")

_SIBLING_IMPORT = re.compile(rf"^(?:from {KUBE_SUBDIR} )?import (\w+_pb2) as (\w+)$", re.MULTILINE)


def proto_files(proto_dir: Path = PROTO_DIR, subdir: str = "") -> list[str]:
    """The ``.proto`` names relative to ``proto_dir``: they become the descriptor-pool file names."""
    names = sorted(str(path.relative_to(proto_dir)) for path in (proto_dir / subdir).glob("*.proto"))
    if not names:
        raise ConfigError("no .proto files found", where=str(proto_dir), fix="run from a kubelet-dra source checkout")
    return names


def generated_files(directory: Path) -> list[Path]:
    """Every generated module in ``directory``, sorted, so stale leftovers are noticed too."""
    return sorted({path for pattern in GENERATED_GLOBS for path in directory.glob(pattern)})


def generate(out_dir: Path, proto_dir: Path = PROTO_DIR) -> list[Path]:
    """Compile the kubelet's ``.proto`` files into ``out_dir``, replacing what was generated before."""
    return _compile(proto_files(proto_dir), out_dir, proto_dir, grpc=True)


def generate_kube(out_dir: Path, proto_dir: Path = PROTO_DIR) -> list[Path]:
    """Compile the Kubernetes API types (``proto/k8s``) into ``out_dir``: messages only, no services."""
    names = proto_files(proto_dir, KUBE_SUBDIR)
    with tempfile.TemporaryDirectory() as scratch:
        _compile(names, Path(scratch), proto_dir, grpc=False)
        _replace_generated(out_dir, generated_files(Path(scratch) / KUBE_SUBDIR))
    return generated_files(out_dir)


def _compile(names: list[str], out_dir: Path, proto_dir: Path, *, grpc: bool) -> list[Path]:
    """Run protoc on ``names``; earlier output in ``out_dir`` is removed first so no stale module stays.

    Returns the files written, with sibling imports made package-relative.
    """
    try:
        from grpc_tools import protoc
    except ImportError as err:
        raise UsageError(
            "grpcio-tools is not installed", fix="pip install 'kubelet-dra[test]' (it is a development dependency)"
        ) from err
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in generated_files(out_dir):
        stale.unlink()
    well_known = Path(protoc.__file__).parent / "_proto"
    outputs = [f"--python_out={out_dir}", f"--pyi_out={out_dir}"] + ([f"--grpc_python_out={out_dir}"] if grpc else [])
    status = protoc.main(
        ["grpc_tools.protoc", f"--proto_path={proto_dir}", f"--proto_path={well_known}", *outputs, *names]
    )
    if status != 0:
        raise ConfigError(f"protoc failed with exit status {status} (its message is above)", where=str(proto_dir))
    modules = {Path(name).name.removesuffix(".proto") + "_pb2" for name in names}
    written = generated_files(out_dir / Path(names[0]).parent)
    for path in written:
        path.write_text(relative_imports(path.read_text(encoding="utf-8"), modules), encoding="utf-8")
    return written


def _replace_generated(out_dir: Path, fresh: list[Path]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in generated_files(out_dir):
        stale.unlink()
    for path in fresh:
        shutil.copyfile(path, out_dir / path.name)


def relative_imports(source: str, modules: set[str]) -> str:
    """Make ``import x_pb2 as y`` (or ``from k8s import …``) ``from . import x_pb2 as y`` for sibling modules."""
    return _SIBLING_IMPORT.sub(
        lambda match: f"from . import {match[1]} as {match[2]}" if match[1] in modules else match[0], source
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PACKAGE_DIR, help="output directory (default: this package)")
    parser.add_argument(
        "--kube-out", type=Path, default=KUBEPROTO_DIR, help="output directory of the Kubernetes types (kubeproto)"
    )
    parser.add_argument("--proto-dir", type=Path, default=PROTO_DIR, help="directory of the .proto sources")
    args = parser.parse_args(argv)
    try:
        written = generate(args.out, args.proto_dir) + generate_kube(args.kube_out, args.proto_dir)
    except KubeletDRAError as err:
        print(f"{COMMAND}: error: {err}", file=sys.stderr)
        return err.exit_code
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
