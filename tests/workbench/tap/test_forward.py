"""Whatever a driver answers reaches the caller through the tap as it would directly, and is recorded."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
from pathlib import Path

import grpc
import pytest
from tapstandin import Through

from kubelet_dra.peers.api.calls import CALLS_KEPT
from kubelet_dra.workbench.tap.forward import HALF_CLOSE_GRACE


async def outcome(call: grpc.aio.Call, *, stream: bool = False) -> tuple[object, ...]:
    """Everything a caller can observe of one call: answers, initial and trailing metadata, code, details."""
    try:
        answer = [message async for message in call] if stream else await call
    except grpc.aio.AioRpcError:
        answer = None
    return (
        answer,
        tuple(await call.initial_metadata()),
        tuple(await call.trailing_metadata()),
        await call.code(),
        await call.details(),
    )


@pytest.mark.parametrize(
    ("method", "request_bytes", "stream"),
    [("Echo", b"abc", False), ("Fail", b"x", False), ("Count", b"3", True)],
)
async def test_answers_metadata_codes_details_and_trailers_are_the_driver_s(
    through: Through, method: str, request_bytes: bytes, stream: bool
) -> None:
    seen = []
    for which in ("driver", "tap"):
        async with through.channel(which) as channel:
            path = f"/test.StandIn/{method}"
            rpc = channel.unary_stream(path) if stream else channel.unary_unary(path)
            seen.append(await outcome(rpc(request_bytes, timeout=10), stream=stream))
    assert seen[0] == seen[1]
    assert seen[0][3] is {"Echo": grpc.StatusCode.OK, "Fail": grpc.StatusCode.FAILED_PRECONDITION}.get(
        method, grpc.StatusCode.RESOURCE_EXHAUSTED
    )


async def test_an_unknown_method_is_recorded_raw_with_its_status(through: Through) -> None:
    async with through.channel() as channel:
        assert await channel.unary_unary("/test.StandIn/Echo")(b"abc", timeout=10) == b"cba"
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await channel.unary_unary("/test.StandIn/Fail")(b"x", timeout=10)
    assert failed.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    echo, fail = through.recorder.records()
    assert echo.method == "/test.StandIn/Echo" and echo.driver == "stand-in" and echo.status == "OK"
    assert echo.request == {"raw": base64.b64encode(b"abc").decode()}
    assert echo.response == [{"raw": base64.b64encode(b"cba").decode()}]
    assert (fail.status, fail.details, fail.response) == ("FAILED_PRECONDITION", "no power", [])


async def test_the_caller_s_deadline_and_metadata_reach_the_driver(through: Through) -> None:
    async with through.channel() as channel:
        await channel.unary_unary("/test.StandIn/Echo")(b"a", timeout=7, metadata=(("x-caller", "kubelet"),))
    (deadline,) = through.standin.deadlines
    assert deadline is not None and 6 < deadline < 7.1  # gRPC rounds a deadline on the wire up to its unit
    assert through.standin.metadata[0]["x-caller"] == "kubelet"


async def test_a_deadline_that_passes_ends_the_driver_s_call_too(through: Through) -> None:
    async with through.channel() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await channel.unary_unary("/test.StandIn/Hang")(b"", timeout=0.5)
    assert late.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    await asyncio.wait_for(through.standin.cancelled.wait(), 5)
    await asyncio.sleep(0.1)
    (record,) = through.recorder.records()
    assert record.status == "DEADLINE_EXCEEDED", "recorded as the caller saw it, as a kubelet's own record has it"


async def test_a_caller_that_cancels_cancels_the_driver_s_call(through: Through) -> None:
    async with through.channel() as channel:
        call = channel.unary_unary("/test.StandIn/Hang")(b"", timeout=30)
        await asyncio.sleep(0.3)
        call.cancel()
        await asyncio.wait_for(through.standin.cancelled.wait(), 5)
    await asyncio.sleep(0.1)
    (record,) = through.recorder.records()
    assert record.status == "CANCELLED"


async def test_a_conversation_is_forwarded_message_by_message(through: Through) -> None:
    """A bidirectional stream whose caller waits for each answer: the tap must not wait for the half-close."""
    async with through.channel() as channel:
        call = channel.stream_stream("/test.StandIn/Chat")(timeout=10)
        answers = []
        for word in (b"one", b"two"):
            await call.write(word)
            answers.append(await asyncio.wait_for(call.read(), HALF_CLOSE_GRACE * 10))
        await call.done_writing()
        assert await call.code() is grpc.StatusCode.OK
    assert answers == [b"re: one", b"re: two"]
    (record,) = through.recorder.records()
    assert len(record.request["messages"]) == 2 and len(record.response or []) == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="/dev/full belongs to root: the recorder refuses another user's file")
@pytest.mark.parametrize("record_file", [Path("/dev/full")])
async def test_a_record_file_that_cannot_be_written_changes_no_call_and_is_said_once(
    through: Through, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk under ``--record-calls``: every call still gets the driver's answer, the failure is one line."""
    with caplog.at_level(logging.INFO, logger="kubelet_dra"):
        async with through.channel() as channel:
            for _ in range(3):
                assert await channel.unary_unary("/test.StandIn/Echo")(b"abc", timeout=10) == b"cba"
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await channel.unary_unary("/test.StandIn/Fail")(b"x", timeout=10)
    assert failed.value.code() is grpc.StatusCode.FAILED_PRECONDITION, "the driver's own answer, not the file's"
    assert [record.status for record in through.recorder.records()] == ["OK", "OK", "OK", "FAILED_PRECONDITION"]
    (said,) = [record for record in caplog.records if "call record file" in record.getMessage()]
    assert said.levelname == "ERROR" and said.kv["path"] == "/dev/full" and "space" in said.kv["err"]  # type: ignore[attr-defined]


async def test_a_long_stream_reaches_the_caller_whole_and_its_record_keeps_the_last_messages(through: Through) -> None:
    """A health stream stays open for as long as the driver is registered: the tap must not keep all it carried."""
    many = CALLS_KEPT + 500
    async with through.channel() as channel:
        chat = channel.stream_stream("/test.StandIn/Chat")(iter([str(number).encode() for number in range(many)]))
        replies = [message async for message in chat]
    assert replies == [b"re: " + str(number).encode() for number in range(many)], "every message went both ways"
    (talk,) = through.recorder.records()
    kept = range(many - CALLS_KEPT, many)
    assert talk.request == {"messages": [{"raw": base64.b64encode(str(number).encode()).decode()} for number in kept]}
    assert talk.response == [{"raw": base64.b64encode(b"re: " + str(number).encode()).decode()} for number in kept]
