"""Redis restarted in the middle of a run: the run rides it out and finishes, never silently.

A private redis-server on a fixed port (so it can come back on the same address), a real
subprocess Celery worker using it as broker and event stream, the fake model streaming slowly.
"""

import json
import subprocess
import time

import pytest
import redis
from celery import Celery

from agents.models import Message, Run
from agents.services import add_message, create_thread
from scripts import devstack
from tests.conftest import TEST_QUEUE
from tests.test_recovery import Worker, wait_until

OUTAGE_SECONDS = 3.0
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


class PrivateRedis:
    def __init__(self, tmp_path):
        self.port, self.dir = devstack.free_port(), tmp_path
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [devstack.redis_server_binary(), "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: devstack.redis_ping("127.0.0.1", self.port), timeout=10, what="redis to answer")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def stream(client, thread_id):
    return [json.loads(f[b"e"]) for _id, f in client.xrange(f"agui:thread:{thread_id}")]


def start_streaming(demo, fake_llm, private_redis, worker, words):
    """A run whose model streams `words` words slowly, handed to the worker through the private
    Redis; returns (thread, run, client of that Redis) once text is on the stream."""
    fake_llm.push({"text": " ".join(f"w{i}" for i in range(words)), "delay": 0.05})
    thread = create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread)
    add_message(thread, "user", "a long story please", run=run)
    Celery(broker=private_redis.url).send_task("agents.tasks.run_agent", args=[run.pk], queue=TEST_QUEUE)
    client = redis.Redis.from_url(private_redis.url)
    wait_until(lambda: any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in stream(client, thread.pk)),
               timeout=60, what="the run to stream", worker=worker)
    return thread, run, client


def test_redis_restart_mid_run_the_run_finishes(demo, fake_llm, private_redis, tmp_path, settings):
    settings.REDIS_URL = private_redis.url  # Worker() hands the worker this Redis as broker and stream
    worker = Worker(tmp_path, "worker", fake_llm)
    try:
        thread, run, client = start_streaming(demo, fake_llm, private_redis, worker, words=120)

        private_redis.stop()  # the restart: all it held is gone, and clients see refused connections
        time.sleep(OUTAGE_SECONDS)  # how long Redis stays down (the fault itself, not a wait for something)
        private_redis.start()

        wait_until(lambda: Run.objects.get(pk=run.pk).status not in ("queued", "running"), timeout=60,
                   what="the run to end", worker=worker)
        run.refresh_from_db()
        assert run.status == "succeeded", (run.status, run.error, worker.output()[-2000:])
        answer = Message.objects.get(thread=thread, role="assistant").content
        assert answer.split() == [f"w{i}" for i in range(120)]  # nothing lost from the stored answer
        events = stream(client, thread.pk)
        assert events and events[-1]["type"] == "RUN_FINISHED"  # clients reading the new stream see the end
    finally:
        worker.stop()


def test_redis_down_longer_than_the_retries_fails_the_run_loudly(demo, fake_llm, private_redis, tmp_path, settings,
                                                                 monkeypatch):
    """Redis stays away past the writer's retries: the run stops as failed (stream_unavailable),
    keeps its RUN_ERROR, and the beat publishes it once Redis is back; a new run then works."""
    from agents import events, execution

    settings.REDIS_URL, settings.AGUI_REDIS_RETRIES = private_redis.url, 1
    monkeypatch.setattr(events, "_client", None)  # this process's writer client follows the private Redis
    worker = Worker(tmp_path, "worker", fake_llm, AGUI_REDIS_RETRIES="1")  # gives up within ~0.1 s
    try:
        thread, run, client = start_streaming(demo, fake_llm, private_redis, worker, words=200)

        private_redis.stop()
        # the run is marked failed first, then its RUN_ERROR (which Redis cannot take) is kept
        wait_until(lambda: Run.objects.filter(pk=run.pk, status="failed").exclude(undelivered_end="").exists(),
                   timeout=60, what="the run to give up on Redis", worker=worker)
        run.refresh_from_db()
        assert run.error_code == "stream_unavailable" and "Retry" in run.error, (run.error_code, run.error)
        kept = json.loads(run.undelivered_end)
        assert kept["type"] == "RUN_ERROR" and kept["code"] == "stream_unavailable"
        with pytest.raises(redis.ConnectionError):  # the beat cannot publish it while Redis is down either
            execution.publish_undelivered_ends()
        assert Run.objects.get(pk=run.pk).undelivered_end == run.undelivered_end

        private_redis.start()  # a restart: the stream and everything in it are gone
        assert stream(client, thread.pk) == []
        assert execution.publish_undelivered_ends() == [run.pk]  # the beat task's body
        assert execution.publish_undelivered_ends() == []  # once
        told = stream(client, thread.pk)
        assert [(e["type"], e.get("code")) for e in told] == [("RUN_ERROR", "stream_unavailable")]
        assert Run.objects.get(pk=run.pk).undelivered_end == ""

        # the worker came through the outage: retrying (a new run on the same history) works
        fake_llm.push({"text": "Back again."})
        retry = Run.objects.create(thread=thread)
        Celery(broker=private_redis.url).send_task("agents.tasks.run_agent", args=[retry.pk], queue=TEST_QUEUE)
        wait_until(lambda: Run.objects.get(pk=retry.pk).status not in ("queued", "running"), timeout=60,
                   what="the retry to end", worker=worker)
        assert Run.objects.get(pk=retry.pk).status == "succeeded", worker.output()[-2000:]
        assert stream(client, thread.pk)[-1]["type"] == "RUN_FINISHED"
    finally:
        worker.stop()
