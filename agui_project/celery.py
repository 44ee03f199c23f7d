import gc
import os
from collections.abc import Mapping

from celery import Celery, signals

# beat: its task_prerun frees a sweep's next send as a worker starts the sweep
from agui_project import agreement, beat  # noqa: F401

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")


class DjangoCelerySettings(Mapping):
    """Django's CELERY_* settings as a plain dict, copied when Celery first reads its configuration
    (lazily, as with "django.conf:settings": this module is imported before the settings are).

    Celery wraps a settings object in a DictAttribute, and its configuration view tries each key
    in two or three spellings in every source: for a key left at Celery's default, that is several
    failed getattr() calls on Django's lazy settings, each raising AttributeError. Publishing one
    task reads the configuration ~25 times (~0.2 ms of its ~0.5 ms). A dict answers a miss at once.
    Settings changed after Celery read them are not seen, as Celery's connections never did."""

    prefix = "CELERY_"

    def __init__(self):
        self._copy = None

    @property
    def _settings(self):
        if self._copy is None:
            from django.conf import settings

            self._copy = {k: getattr(settings, k) for k in dir(settings) if k.startswith(self.prefix)}
        return self._copy

    def __getitem__(self, key):
        return self._settings[key]

    def __iter__(self):
        return iter(self._settings)

    def __len__(self):
        return len(self._settings)


# the Redis time (ms) of recovery's last sweep, which the beat sends every 10 s and a worker runs
# (agents/runtime/execution.py writes it): /healthz reads it to say whether the beat still sweeps
SWEPT_KEY = "agui:leases:swept"

# the pool kept between tasks (celery_fixup); tasks published straight to the broker's channel (broker.Task)
app = Celery("agui_project", fixups=["agui_project.celery_fixup:fixup"], task_cls="agui_project.broker:Task")
app.config_from_object(DjangoCelerySettings(), namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_before_create_process.connect
@signals.worker_ready.connect
def freeze_what_was_made_at_start(**kwargs):
    """What the worker made while starting (Django, the apps, Celery, the model clients: ~265,000
    tracked objects) is kept for its life: the cyclic collector leaves it from then on, as Daphne's
    does (asgi.py). A full pass over it took 100-180 ms, stalling the consumer or a run; and in a
    prefork child it would write to every inherited object's header, copying the pages it shares
    with the parent. Frozen before each child is forked (prefork: a replaced child too) and once
    the worker is ready (any pool). What is already garbage is collected first, or it would stay
    forever: a pass over all of it the first time, then over what was made since."""
    gc.collect()
    gc.freeze()


@signals.worker_ready.connect
def compare_settings_as_a_worker(sender=None, **kwargs):
    """This worker's shared settings, written to Redis and compared with the other processes' while
    it lives (agui_project/agreement.py): /healthz names the ones that differ."""
    agreement.keep_checking("worker", getattr(sender, "hostname", None))


@signals.beat_init.connect
def compare_settings_as_the_beat(**kwargs):
    agreement.keep_checking("beat")


@signals.after_setup_logger.connect
def filter_celerys_own_handlers(logger=None, **kwargs):
    """Celery puts handlers of its own on the root logger in the worker and the beat, so the filters
    settings.LOGGING gives the console (a mail link's token hidden, a Redis outage's tracebacks once a
    minute) go on those too."""
    from agui_project.logs import OutageLines, SecretPaths

    for handler in getattr(logger, "handlers", ()):
        if not any(isinstance(f, OutageLines) for f in handler.filters):
            handler.addFilter(SecretPaths())
            handler.addFilter(OutageLines())
