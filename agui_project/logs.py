"""The console's filter for the routine lines of a healthy stack (settings.LOGGING, LOG_LEVEL)."""

import logging


class RoutineLines(logging.Filter):
    """Leaves out Celery's INFO lines that every healthy minute repeats: the beat's "Sending due
    task" (every 2 s), the worker's "Task ... received" and "Task ... succeeded in 0.002s".
    A retry (INFO too), a failure and anything at WARNING or above still get through.
    On the loggers celery.beat, celery.worker.strategy and celery.app.trace; LOG_LEVEL=DEBUG drops it."""

    def filter(self, record):
        if record.levelno != logging.INFO:
            return True
        if record.name == "celery.app.trace":
            return " succeeded in " not in str(record.msg)  # celery.app.trace.LOG_SUCCESS
        return record.name not in ("celery.beat", "celery.worker.strategy")
