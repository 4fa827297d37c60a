"""A kubeconfig whose TLS files hold no certificate stops the command with one line naming the file and the fix,
not a traceback at the first request (an empty ``ca.crt`` is what a cluster without a root CA publishes)."""

from __future__ import annotations

from pathlib import Path

import yaml
from helpers import kubelet_dra


async def test_an_empty_ca_file_is_named_with_the_fix(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": str(ca)}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    code, _, err = await kubelet_dra(
        "run", "--node-name", "sim-1", "--kubeconfig", str(kubeconfig), "--registry-dir", str(tmp_path / "registry")
    )
    assert code == 2, err
    assert f"{ca}: no usable certificate in the file" in err
    assert "kube-root-ca.crt" in err
    assert "Traceback" not in err
