"""Celery reads the CELERY_* settings from a copy of them (agui_project/celery.py DjangoCelerySettings)."""

from django.conf import LazySettings, settings

from agui_project.celery import app
from tests.agui_project.test_settings_env import run_django


def test_the_celery_settings_reach_celery_and_the_rest_are_its_defaults(tmp_path):
    out = run_django(
        "from agui_project.celery import app; c = app.conf; print(c.task_default_queue, "
        "c.broker_transport_options['visibility_timeout'], c.task_acks_late, c.task_time_limit, "
        "sorted(c.beat_schedule) == sorted(__import__('django.conf').conf.settings.CELERY_BEAT_SCHEDULE))",
        CELERY_TASK_DEFAULT_QUEUE="queue-x", CELERY_VISIBILITY_TIMEOUT="600", AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["queue-x", "600", "True", "None", "True"]


def test_a_worker_starts_without_deprecation_warnings_and_speaks_json_only(tmp_path):
    """CELERY_RESULT_BACKEND, CELERY_ACCEPT_CONTENT and the serializers are also Celery 3's own
    setting names: set, each made the worker warn at start that it was deprecated. Left out, they
    are Celery's defaults: no result backend, JSON only."""
    out = run_django(
        "import warnings\nfrom agui_project.celery import app\nc = app.conf\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    c.maybe_warn_deprecated_settings()\n"
        "print(len(seen), c.result_backend, c.task_serializer, c.result_serializer, list(c.accept_content))",
        AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", "None", "json", "json", "['json']"]


def test_a_key_left_at_celerys_default_does_not_ask_djangos_lazy_settings(monkeypatch):
    """Each failed getattr() on Django's lazy settings raises and catches AttributeError: Celery's
    configuration view asked two or three of them for every such key, ~25 reads per task published."""
    assert app.conf.task_time_limit is None  # loaded
    acks_late = settings.CELERY_TASK_ACKS_LATE
    asked = []
    original = LazySettings.__getattr__

    def counting(self, name):
        asked.append(name)
        return original(self, name)

    monkeypatch.setattr(LazySettings, "__getattr__", counting)
    for _ in range(3):
        assert app.conf.task_time_limit is None and app.conf.task_compression is None
    assert app.conf.task_acks_late is acks_late
    assert asked == []


def test_a_worker_freezes_what_it_made_at_start_before_each_fork_and_once_ready(tmp_path):
    """What a worker made while starting leaves the cyclic collector's generations (gc.freeze):
    before a prefork child is forked, so the child's passes never touch the pages it shares with
    its parent, and once the worker is ready, whatever its pool."""
    out = run_django(
        "import gc\nfrom celery import signals\nimport agui_project.celery\n"
        "assert gc.get_freeze_count() == 0\n"
        "tracked = len(gc.get_objects())\n"
        "signals.worker_before_create_process.send(sender=None)\n"
        "frozen, left = gc.get_freeze_count(), len(gc.get_objects())\n"
        "made_since = [[] for _ in range(1000)]\n"
        "signals.worker_ready.send(sender=None)\n"
        "collected = {id(o) for o in gc.get_objects()}\n"  # the generations' objects, not the frozen ones
        "print(tracked, frozen, left, sum(id(o) in collected for o in made_since))", AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    tracked, frozen, left, unfrozen = map(int, out.stdout.split())
    assert frozen > tracked * 0.8 and left < tracked * 0.05  # Django and the apps: tens of thousands
    # made after the first freeze: frozen when the worker is ready (a count of the frozen was off by a
    # few when another thread's garbage went meanwhile)
    assert unfrozen == 0


def test_worker_and_beat_lines_name_their_logger():
    """README says which logger to look for (agui_project.agreement): a worker's and the beat's lines
    named none ("[…: WARNING/MainProcess] settings: …")."""
    import logging

    from agui_project.celery import app

    record = logging.LogRecord("agui_project.agreement", logging.WARNING, __file__, 1, "settings: differ", None, None)
    assert "WARNING/MainProcess] agui_project.agreement: settings: differ" in logging.Formatter(
        app.conf.worker_log_format).format(record)
