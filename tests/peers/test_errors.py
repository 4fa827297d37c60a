"""One exception hierarchy: every exception class the kubelet's modules define is in the tree
``peers/errors.py`` draws (or is one of the module-private control-flow classes it names), and the
kubelet's own failures keep the kubelet's text as their ``str()``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import kubelet_dra.kubelet
from kubelet_dra.peers import errors
from kubelet_dra.peers.errors import DriverNotRegistered, KubeletDRAError, KubeletError

PRIVATE_CONTROL_FLOW = {"_Retry", "_Exhausted", "_WalkAborted"}


def kubelet_exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(kubelet_dra.kubelet.__path__, "kubelet_dra.kubelet."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[name] = value
    return found


def test_every_exception_class_of_the_kubelet_is_in_the_one_tree_and_drawn_there() -> None:
    classes = kubelet_exception_classes()
    assert classes.keys() >= PRIVATE_CONTROL_FLOW
    for name, cls in classes.items():
        if name in PRIVATE_CONTROL_FLOW:
            continue
        assert issubclass(cls, KubeletDRAError | KubeletError), f"{cls.__module__}.{name} is outside the tree"
        assert name in (errors.__doc__ or ""), f"{name} is not drawn in peers/errors.py"


def test_a_kubelet_error_is_the_kubelet_s_text_word_for_word() -> None:
    assert str(DriverNotRegistered("DRA driver gpu.example.com is not registered")) == (
        "DRA driver gpu.example.com is not registered"
    )
