"""Structured key=value logging with klog-style verbosity levels.

Every component gets a ``Logger`` carrying its context (driver, pod, claim, request_id...).
``logger.v(4).info(...)`` is emitted only when the process runs with ``-v 4`` or more, the way
klog's ``V(4)`` works, so the kubelet's own log levels carry over.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

_ROOT = "kubelet_dra"
_state = {"verbosity": 0}


def configure(verbosity: int = 0, stream: TextIO | None = None) -> None:
    """Send all kubelet-dra logs to ``stream`` (stderr) at the given klog verbosity."""
    _state["verbosity"] = verbosity
    root = logging.getLogger(_ROOT)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    root.propagate = False


def verbosity() -> int:
    return _state["verbosity"]


def format_value(value: Any) -> str:
    """Render one value the logfmt way: bare when safe, double-quoted otherwise."""
    text = value if isinstance(value, str) else repr(value) if isinstance(value, bytes) else str(value)
    if text and not any(c in text for c in ' "=\\\n\t'):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


class KeyValueFormatter(logging.Formatter):
    """ts=... level=... logger=... msg="..." key=value ..."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [
            f"ts={ts}.{int(record.msecs):03d}Z",
            f"level={record.levelname.lower()}",
        ]
        v_level = getattr(record, "v", 0)
        if v_level:
            parts.append(f"v={v_level}")
        parts.append(f"logger={record.name.removeprefix(_ROOT + '.')}")
        parts.append(f"msg={format_value(record.getMessage())}")
        for key, value in getattr(record, "kv", {}).items():
            parts.append(f"{key}={format_value(value)}")
        return " ".join(parts)


class Logger:
    """A component logger with fixed context values and an optional verbosity gate."""

    def __init__(
        self, name: str, values: dict[str, Any] | None = None, level: int = 0, *, logger: logging.Logger | None = None
    ) -> None:
        self._logger = logger or logging.getLogger(f"{_ROOT}.{name}")
        self._name = name
        self._values = dict(values or {})
        self._level = level

    def with_values(self, **values: Any) -> Logger:
        """A logger that adds ``values`` to every line (the way klog's WithValues does)."""
        return Logger(self._name, {**self._values, **values}, self._level, logger=self._logger)

    def v(self, level: int) -> Logger:
        """A logger whose info lines appear only at ``-v level`` or more (derived loggers share the component's
        ``logging.Logger``: no lookup under logging's lock on the hot path)."""
        return Logger(self._name, self._values, level, logger=self._logger)

    @property
    def enabled(self) -> bool:
        return verbosity() >= self._level

    def info(self, msg: str, **values: Any) -> None:
        if self.enabled:
            self._emit(logging.INFO, msg, values)

    def warning(self, msg: str, **values: Any) -> None:
        self._emit(logging.WARNING, msg, values)

    def error(self, msg: str, err: BaseException | str | None = None, **values: Any) -> None:
        if err is not None:
            values = {"err": str(err), **values}
        self._emit(logging.ERROR, msg, values)

    def _emit(self, level: int, msg: str, values: dict[str, Any]) -> None:
        self._logger.log(level, msg, extra={"kv": {**self._values, **values}, "v": self._level})


def clock_time(at: float) -> str:
    """``HH:MM:SS.mmm`` in local time, as a kubelet log line stamps it (for live views beside the logs)."""
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at % 1 * 1000):03d}"


def get_logger(component: str, **values: Any) -> Logger:
    return Logger(component, values)
