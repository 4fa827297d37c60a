"""A kubeconfig whose TLS files hold no certificate stops the command with one line naming the file and the fix,
not a traceback at the first request (an empty ``ca.crt`` is what a cluster without a root CA publishes); a relative
file name in a kubeconfig means the file next to it, as kubectl reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import kubelet_dra


def write_kubeconfig(kubeconfig: Path, ca: str) -> None:
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": ca}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )


async def test_an_empty_ca_file_is_named_with_the_fix(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("")
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, str(ca))
    code, _, err = await kubelet_dra(
        "run", "--node-name", "sim-1", "--kubeconfig", str(kubeconfig), "--registry-dir", str(tmp_path / "registry")
    )
    assert code == 2, err
    assert f"{ca}: no usable certificate in the file" in err
    assert "kube-root-ca.crt" in err
    assert "Traceback" not in err


async def test_a_relative_ca_file_is_the_one_next_to_the_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cluster").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cluster" / "ca.crt").write_text("")
    kubeconfig = tmp_path / "cluster" / "kubeconfig"
    write_kubeconfig(kubeconfig, "ca.crt")
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, _, err = await kubelet_dra(
        "run", "--node-name", "sim-1", "--kubeconfig", str(kubeconfig), "--registry-dir", str(tmp_path / "registry")
    )
    assert code == 2, err
    assert f"{tmp_path / 'cluster' / 'ca.crt'}: no usable certificate in the file" in err
