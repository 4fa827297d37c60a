"""What the API server lets these credentials do, asked before doing it.

A node that lacks a permission would otherwise fail one request at a time, deep in a retry loop;
asking first (``SelfSubjectReview``, ``SelfSubjectAccessReview``, which every authenticated user
may send) turns that into one message that names each missing permission. The answers come from
the server's own authorizers (RBAC, and the Node authorizer for ``system:node:<name>``), so they
are exact; what admission refuses later (NodeRestriction) is not among them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path

NODE_USER_PREFIX = "system:node:"
MASTERS = "system:masters"
"""The group every authorizer allows everything (an admin kubeconfig's)."""


@attrs.frozen
class Subject:
    """Who the server takes these credentials for."""

    user: str
    groups: tuple[str, ...] = ()

    @property
    def node(self) -> str | None:
        """The node name of a node identity (``system:node:<name>``), else None."""
        return self.user.removeprefix(NODE_USER_PREFIX) if self.user.startswith(NODE_USER_PREFIX) else None


@attrs.frozen
class Permission:
    """One request kind: ``verb`` on ``group``/``resource``[/``subresource``] (in ``namespace``; only objects
    matching ``field_selector``), and why it is needed."""

    verb: str
    resource: str
    why: str
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    field_selector: str = ""

    def __str__(self) -> str:
        text = f"{self.verb} {self.resource}"
        if self.subresource:
            text += f"/{self.subresource}"
        if self.group:
            text += f".{self.group}"
        if self.namespace:
            text += f" in namespace {self.namespace}"
        if self.field_selector:
            text += f" with fieldSelector {self.field_selector}"
        return text

    def review(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {"verb": self.verb, "group": self.group, "resource": self.resource}
        if self.subresource:
            attributes["subresource"] = self.subresource
        if self.namespace:
            attributes["namespace"] = self.namespace
        if self.field_selector:
            attributes["fieldSelector"] = {"rawSelector": self.field_selector}
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }


async def whoami(kube: KubeClient) -> Subject | None:
    """Who the server knows these credentials as; None when it cannot say (no such API, as on the embedded
    server, or no answer)."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        answer = await kube.request("POST", api_path("authentication.k8s.io", "v1", "selfsubjectreviews"), body=review)
    except KubeApiError:
        return None
    info = answer.get("status", {}).get("userInfo", {})
    return Subject(str(info["username"]), tuple(info.get("groups") or ())) if info.get("username") else None


async def denied(kube: KubeClient, permissions: list[Permission]) -> list[tuple[Permission, str]]:
    """The permissions the server's authorizers refuse these credentials, each with the reason given."""
    path = api_path("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
    answers = await asyncio.gather(*(kube.request("POST", path, body=p.review()) for p in permissions))
    return [
        (permission, str(answer.get("status", {}).get("reason", "")))
        for permission, answer in zip(permissions, answers, strict=True)
        if not answer.get("status", {}).get("allowed")
    ]
