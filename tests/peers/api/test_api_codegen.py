"""The committed ``*_pb2*`` modules are exactly what the generator makes from ``proto/`` today."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from kubelet_dra.peers.api import codegen, dra_v1_pb2_grpc

# The source checkout, not the installed package: the test suite may run against an installed copy.
REPO = Path(__file__).resolve().parents[3]
PROTO_DIR = REPO / "proto"
COMMITTED_DIR = codegen.PACKAGE_DIR
KUBEPROTO_DIR = codegen.KUBEPROTO_DIR

PROTOS = [
    "dra_health_v1.proto",
    "dra_health_v1alpha1.proto",
    "dra_v1.proto",
    "dra_v1alpha4.proto",
    "dra_v1beta1.proto",
    "pluginregistration.proto",
]


KUBE_PROTOS = [
    "k8s/coordination_v1.proto",
    "k8s/core_v1.proto",
    "k8s/intstr.proto",
    "k8s/meta_v1.proto",
    "k8s/node_v1.proto",
    "k8s/options.proto",
    "k8s/resource_quantity.proto",
    "k8s/resource_v1.proto",
    "k8s/resource_v1beta1.proto",
    "k8s/resource_v1beta2.proto",
    "k8s/runtime.proto",
    "k8s/storage_v1.proto",
]


def test_every_api_has_a_proto():
    assert codegen.proto_files(PROTO_DIR) == PROTOS
    assert codegen.proto_files(PROTO_DIR, codegen.KUBE_SUBDIR) == KUBE_PROTOS


def test_committed_kubernetes_types_are_current(tmp_path: Path):
    fresh = codegen.generate_kube(tmp_path, PROTO_DIR)
    committed = codegen.generated_files(KUBEPROTO_DIR)
    hint = f"run `{codegen.COMMAND}` and commit the result"
    assert [path.name for path in committed] == [path.name for path in fresh], f"generated module set differs: {hint}"
    for new, old in zip(fresh, committed, strict=True):
        assert new.read_bytes() == old.read_bytes(), f"kubelet_dra/peers/kubeproto/{old.name} is out of date: {hint}"
    assert "from . import meta_v1_pb2" in (tmp_path / "resource_v1_pb2.py").read_text()


def test_committed_modules_are_current(tmp_path: Path):
    fresh = codegen.generate(tmp_path, PROTO_DIR)
    committed = codegen.generated_files(COMMITTED_DIR)
    hint = f"run `{codegen.COMMAND}` and commit the result"
    tools, generated_by = version("grpcio-tools"), dra_v1_pb2_grpc.GRPC_GENERATED_VERSION
    if tools != generated_by:
        hint += f" (committed modules come from grpcio-tools {generated_by}, this environment has {tools})"
    assert [path.name for path in committed] == [path.name for path in fresh], f"generated module set differs: {hint}"
    for new, old in zip(fresh, committed, strict=True):
        assert new.read_bytes() == old.read_bytes(), f"kubelet_dra/peers/api/{old.name} is out of date: {hint}"


def test_generated_modules_import_their_siblings_relatively(tmp_path: Path):
    for path in codegen.generate(tmp_path, PROTO_DIR):
        lines = path.read_text().splitlines()
        assert not [line for line in lines if line.startswith("import ") and "_pb2" in line], path.name
    grpc_source = (tmp_path / "dra_v1_pb2_grpc.py").read_text()
    assert "from . import dra_v1_pb2 as dra__v1__pb2\n" in grpc_source


def test_relative_imports_leave_other_modules_alone():
    source = "import grpc\nimport dra_v1_pb2 as dra__v1__pb2\nimport other_pb2 as other__pb2\n"
    assert codegen.relative_imports(source, {"dra_v1_pb2"}) == (
        "import grpc\nfrom . import dra_v1_pb2 as dra__v1__pb2\nimport other_pb2 as other__pb2\n"
    )


def test_codegen_removes_modules_of_deleted_protos(tmp_path: Path):
    stale = tmp_path / "dra_v1alpha2_pb2.py"
    stale.write_text("# left over from a deleted proto\n")
    codegen.generate(tmp_path, PROTO_DIR)
    assert not stale.exists()
