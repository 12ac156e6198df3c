"""The `sepp` logger, and log lines mirrored as events on the active span when OTel is on.

The client logs through the standard library logger named `sepp`; configure it like any other
logger. With the `otel` extra, each line is also added to the current span (if it is recording)
as an event named `log` with the attributes `event.name`, `log.severity` and `log.message`, so
a trace shows why a job was nacked without a separate log pipeline. The event is added whatever
the logger's level, since the tracing backend does its own filtering.
"""

from __future__ import annotations

import logging

from . import _otel

logger = logging.getLogger("sepp")

_otel_on = _otel.enabled()


def _emit(level: int, severity: int, message: str, args: tuple[object, ...]) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, message, *args, stacklevel=3)
    if _otel_on:
        _otel.record_log(severity, message, args)


def debug(message: str, *args: object) -> None:
    _emit(logging.DEBUG, _otel.SEVERITY_DEBUG, message, args)


def info(message: str, *args: object) -> None:
    _emit(logging.INFO, _otel.SEVERITY_INFO, message, args)


def warning(message: str, *args: object) -> None:
    _emit(logging.WARNING, _otel.SEVERITY_WARN, message, args)


def error(message: str, *args: object) -> None:
    _emit(logging.ERROR, _otel.SEVERITY_ERROR, message, args)
