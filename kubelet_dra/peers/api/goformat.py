"""Go's formatting of gRPC errors, so kubelet error texts can be reproduced byte for byte."""

from __future__ import annotations

import grpc


def go_code_name(code: grpc.StatusCode) -> str:
    """A gRPC status code as grpc-go's ``codes.Code.String()`` spells it: ``OK``, ``DeadlineExceeded``, ``Canceled``."""
    if code is grpc.StatusCode.CANCELLED:
        return "Canceled"
    return "OK" if code is grpc.StatusCode.OK else code.name.title().replace("_", "")


def go_rpc_error(err: grpc.aio.AioRpcError) -> str:
    """A gRPC error as grpc-go prints it, which is how it appears in kubelet messages."""
    return go_status_error(err.code(), err.details() or "")


def go_status_error(code: grpc.StatusCode, details: str) -> str:
    """A failed call's status as grpc-go prints the error (``rpc error: code = … desc = …``)."""
    name = go_code_name(code)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED and details == "Deadline Exceeded":
        details = "context deadline exceeded"  # what a Go client reports for its own deadline
    return f"rpc error: code = {name} desc = {details}"
