"""Structured logging: key=value lines, klog-style verbosity gates."""

import io

import pytest

from kubelet_dra.peers import log


@pytest.fixture
def stream():
    out = io.StringIO()
    yield out
    log.configure(0)


def test_line_is_key_value_with_context_and_quoting(stream):
    log.configure(0, stream)
    logger = log.get_logger("registration", driver="gpu.example.com").with_values(socket="/p/x-reg.sock")
    logger.info("Registered plugin", service="v1.DRAPlugin", note='has "quotes" and spaces')
    line = stream.getvalue().strip()
    assert " level=info " in line
    assert " logger=registration " in line
    assert ' msg="Registered plugin" ' in line
    assert " driver=gpu.example.com socket=/p/x-reg.sock service=v1.DRAPlugin " in line
    assert line.endswith('note="has \\"quotes\\" and spaces"')


def test_verbosity_gates_info_but_never_errors(stream):
    log.configure(2, stream)
    logger = log.get_logger("plugins")
    logger.v(2).info("shown at -v 2")
    logger.v(3).info("hidden at -v 2")
    logger.v(3).error("errors always show", err=RuntimeError("boom"))
    text = stream.getvalue()
    assert "shown at -v 2" in text and " v=2 " in text
    assert "hidden at -v 2" not in text
    assert 'msg="errors always show" err=boom' in text


def test_empty_value_is_quoted(stream):
    log.configure(0, stream)
    log.get_logger("x").info("m", error="")
    assert stream.getvalue().strip().endswith('error=""')
