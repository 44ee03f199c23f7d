"""A Redis outage's errors are logged with their traceback once a minute per logger and message, then
as their first line (agui_project/logs.OutageLines): the beat wrote 4,097 lines in 26 s of an
outage, 152 tracebacks each with the whole stack."""

import logging

import kombu.exceptions
import redis

from agui_project.celery import filter_celerys_own_handlers
from agui_project.logs import OutageLines, SecretPaths


def record(exc, msg="Message Error: %s\n%s", args=None, created=1000.0, name="celery.beat"):
    try:
        raise exc
    except Exception as caught:
        made = logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args or (caught, "['the stack']"),
                                 (type(caught), caught, caught.__traceback__))
    made.created = created
    return made


def test_an_outage_keeps_its_traceback_once_a_minute_per_logger_and_message():
    lines = OutageLines()
    first = record(redis.ConnectionError("Error 111 connecting"))
    assert lines.filter(first) and first.exc_info is not None
    again = record(redis.ConnectionError("Error 111 connecting"), created=1030.0)
    assert lines.filter(again) and again.exc_info is None and again.stack_info is None
    assert again.getMessage().startswith("Message Error: Error 111 connecting [still unreachable; its traceback")
    assert "the stack" not in again.getMessage()
    other = record(redis.ConnectionError("Error 111 connecting"), name="agents.dispatch", created=1031.0)
    assert lines.filter(other) and other.exc_info is not None  # another logger says it once too
    later = record(redis.ConnectionError("Error 111 connecting"), created=1000.0 + OutageLines.QUIET_SECONDS)
    assert lines.filter(later) and later.exc_info is not None  # a minute on: the traceback again


def test_what_an_outage_caused_counts_and_other_errors_are_left_alone():
    lines = OutageLines()

    def wrapped():
        try:
            raise kombu.exceptions.OperationalError("broker away")
        except kombu.exceptions.OperationalError as exc:
            raise RuntimeError("could not publish") from exc

    for _ in range(2):
        try:
            wrapped()
        except RuntimeError as exc:
            made = record(exc)
            lines.filter(made)
    assert made.exc_info is None  # the second, caused by the broker's outage
    for created in (1000.0, 1001.0):
        plain = record(ValueError("a bug"), created=created)
        assert lines.filter(plain) and plain.exc_info is not None  # every time, whole


def test_celerys_own_handlers_get_the_projects_filters_once():
    logger, handler = logging.Logger("root-like"), logging.StreamHandler()
    logger.addHandler(handler)
    filter_celerys_own_handlers(logger=logger)
    filter_celerys_own_handlers(logger=logger)
    assert sorted(type(f).__name__ for f in handler.filters) == [OutageLines.__name__, SecretPaths.__name__]
