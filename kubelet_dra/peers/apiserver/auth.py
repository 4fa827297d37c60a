"""Who is calling (bearer tokens) and what a node identity may change.

Every client presents a bearer token from its kubeconfig. The admin may do anything. In
node-restricted mode each simulated node has its own identity (``system:node:<name>`` in
``system:nodes``) that may read everything but write only ResourceSlices on its own node:
the rule real clusters enforce on DRA drivers with the node authorizer and a validating
admission policy, so a driver that publishes slices for the wrong node fails here as it would there.
It may also write what its kubelet writes (its Node, Lease and CSINode, Events, its pods' status).
Like the Node authorizer, it lists, watches and deletes ResourceSlices as a collection only with
``spec.nodeName=<its node>`` in the field selector, so a driver that lists every slice fails here too.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.nodewrites import kubelet_refusal
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, ResourceType
from kubelet_dra.peers.apiserver.secretfiles import write_private
from kubelet_dra.peers.errors import StateError

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
AUTHENTICATED_GROUP = "system:authenticated"
ADMIN_NAME = "kubelet-dra:admin"
READ_VERBS = frozenset({"get", "list", "watch"})
POLICY_NAME = "kubelet-dra-node-restriction"


@attrs.frozen
class User:
    """An authenticated identity, as kube-apiserver's user.Info."""

    name: str
    groups: tuple[str, ...]

    @property
    def node_name(self) -> str | None:
        """The node this identity acts for, or None for a non-node user."""
        if NODES_GROUP in self.groups and self.name.startswith(NODE_USER_PREFIX):
            return self.name.removeprefix(NODE_USER_PREFIX)
        return None


ADMIN = User(ADMIN_NAME, ("system:masters", AUTHENTICATED_GROUP))


def node_user(node_name: str) -> User:
    return User(f"{NODE_USER_PREFIX}{node_name}", (NODES_GROUP, AUTHENTICATED_GROUP))


class TokenAuthenticator:
    """Bearer tokens → users. Tokens are random; with a data dir they survive restarts."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._users: dict[str, User] = {}
        self._tokens: dict[User, str] = {}
        if path is not None and path.exists():
            self._load(path)

    def authenticate(self, authorization: str | None) -> User:
        """The caller behind an ``Authorization: Bearer ...`` header; 401 Unauthorized otherwise."""
        scheme, _, token = (authorization or "").partition(" ")
        user = self._users.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise status.unauthorized()
        return user

    def token_for(self, user: User) -> str:
        """``user``'s token, issued on first use (and saved when there is a data dir)."""
        token = self._tokens.get(user)
        if token is None:
            token = secrets.token_urlsafe(32)
            self._users[token] = user
            self._tokens[user] = token
            self._save()
        return token

    def _load(self, path: Path) -> None:
        try:
            entries = json.loads(path.read_text())["tokens"]
            for entry in entries:
                user = User(entry["user"], tuple(entry["groups"]))
                self._users[entry["token"]] = user
                self._tokens[user] = entry["token"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise StateError(
                f"cannot read API server tokens: {err}",
                where=str(path),
                fix="delete the file; new tokens are issued and kubeconfigs must be rewritten",
            ) from err

    def _save(self) -> None:
        if self._path is None:
            return
        entries = [
            {"token": token, "user": user.name, "groups": list(user.groups)} for user, token in self._tokens.items()
        ]
        write_private(self._path, json.dumps({"tokens": entries}, indent=2).encode())


def authorize_write(
    user: User,
    verb: str,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    subresource: str,
    objects: Iterable[dict[str, Any]],
) -> None:
    """403 Forbidden when a node identity writes anything but its own node's ResourceSlices and what its kubelet
    writes (:mod:`.nodewrites`).

    ``objects`` are every version of the object(s) the write touches (old and new, storage version).
    """
    node = user.node_name
    if node is None or verb in READ_VERBS:
        return
    qualified = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    subject = f'{qualified} "{name}"' if name else qualified
    if rt.group != RESOURCE_GROUP or rt.plural != "resourceslices":
        refusal = kubelet_refusal(node, verb, rt, namespace, name, subresource, objects)
        if refusal is None:
            return
        if refusal.admission:
            message = f'{qualified} "{refusal.name}" is forbidden: {refusal.reason}'
            raise status.forbidden(message, rt.plural, rt.group, refusal.name)
        resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        message = (
            f'{subject} is forbidden: User "{user.name}" cannot {verb} resource "{resource}" '
            f'in API group "{rt.group}" {scope}'
        ) + (f": {refusal.reason}" if refusal.reason else "")
        raise status.forbidden(message, rt.plural, rt.group, name)
    for obj in objects:
        slice_node = (obj.get("spec") or {}).get("nodeName") or ""
        if slice_node != node:
            target = f"node '{slice_node}'" if slice_node else "no node"
            message = (
                f"{subject} is forbidden: ValidatingAdmissionPolicy '{POLICY_NAME}' denied request: "
                f"this user running on node '{node}' may not modify resourceslices on {target}"
            )
            raise status.forbidden(message, rt.plural, rt.group, name)


COLLECTION_VERBS = frozenset({"list", "watch", "deletecollection"})


def authorize_collection(user: User, verb: str, rt: ResourceType, field_selector: str) -> None:
    """403 Forbidden when a node identity lists, watches or deletes ResourceSlices without selecting its own
    node by name, in the Node authorizer's words."""
    node = user.node_name
    if node is None or verb not in COLLECTION_VERBS or rt.group != RESOURCE_GROUP or rt.plural != "resourceslices":
        return
    terms = {term.strip() for term in field_selector.split(",")}
    if f"spec.nodeName={node}" in terms or f"spec.nodeName=={node}" in terms:
        return
    message = (
        f'{rt.plural}.{rt.group} is forbidden: User "{user.name}" cannot {verb} resource "{rt.plural}" in API group'
        f' "{rt.group}" at the cluster scope: can only list/watch/deletecollection resourceslices with nodeName'
        " field selector"
    )
    raise status.forbidden(message, rt.plural, rt.group, "")
