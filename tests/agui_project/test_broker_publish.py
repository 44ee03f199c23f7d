"""A task's plain delay() goes straight to the broker's channel (agui_project/broker.Task), as the
very message Celery's own publish makes but for its ids; anything unusual, and a refused publish,
takes Celery's path. Real Redis; a queue of the test's own, which no worker reads."""

import base64
import json
import uuid

import celery
import pytest
from celery import current_app
from kombu.transport.virtual.base import Channel
from redis.exceptions import ConnectionError as RedisConnectionError

from agui_project import broker
from agui_project.redis_client import redis_client

IDS = {("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id"), ("properties", "delivery_tag")}


@pytest.fixture
def queue(monkeypatch):
    """The tasks' direct publishes go to a queue of this test's own (as Celery's do with queue=)."""
    name = f"test-publish-{uuid.uuid4().hex}"
    for task in (current_app.tasks["agents.tasks.run_agent"], current_app.tasks["agents.tasks.continue_decided"]):
        # decided once per process, as in a worker or Daphne
        assert task._direct_queue == current_app.conf.task_default_queue
        monkeypatch.setattr(task, "_direct_queue", name)
    yield name
    redis_client().delete(name)


def _published(name):
    """The queue's messages, oldest first, as kombu's Redis transport stores them."""
    return [json.loads(raw) for raw in reversed(redis_client().lrange(name, 0, -1))]


def _without_ids(message):
    message = json.loads(json.dumps(message))
    for part, key in IDS:
        assert message[part].pop(key)
    return message


@pytest.mark.parametrize("task_name, args", [("agents.tasks.run_agent", ("run-1",)),
                                              ("agents.tasks.continue_decided", ("42",))])
def test_a_task_goes_as_celerys_own_message_but_its_ids(queue, task_name, args):
    task = current_app.tasks[task_name]
    result = task.apply_async(args)  # what delay() calls (tests stand in for some tasks' delay)
    celery.Task.apply_async(task, args, queue=queue)  # Celery's own publish, to the same queue
    direct, own = _published(queue)
    assert _without_ids(direct) == _without_ids(own)
    assert direct["headers"]["id"] == direct["headers"]["root_id"] == direct["properties"]["correlation_id"] == result.id
    assert json.loads(base64.b64decode(direct["body"]))[0] == list(args)


def test_a_task_with_options_takes_celerys_path(queue, monkeypatch):
    task = current_app.tasks["agents.tasks.run_agent"]
    sent = []
    monkeypatch.setattr(broker.Task, "_publish", lambda self, *a: sent.append(a))  # the direct path
    task.apply_async(("run-1",), queue=queue, countdown=30)
    (message,) = _published(queue)
    assert message["headers"]["eta"] is not None and sent == []
    task.delay("run-2")
    assert len(sent) == 1 and len(_published(queue)) == 1


def test_a_refused_publish_is_sent_again_by_celerys_path(queue, monkeypatch):
    refused = []
    publish = Channel.basic_publish

    def once_refused(self, *args, **kwargs):
        if not refused:
            refused.append(True)
            raise RedisConnectionError("Redis went away")
        return publish(self, *args, **kwargs)

    monkeypatch.setattr(Channel, "basic_publish", once_refused)
    task = current_app.tasks["agents.tasks.run_agent"]
    task.delay("run-1")
    assert refused
    (message,) = _published(queue)
    assert message["headers"]["task"] == "agents.tasks.run_agent"


def test_arguments_the_task_does_not_take_are_refused_before_anything_is_sent(queue):
    with pytest.raises(TypeError):
        current_app.tasks["agents.tasks.run_agent"].delay("run-1", "a second argument")
    assert _published(queue) == []
