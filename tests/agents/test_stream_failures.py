"""An exception inside an AG-UI stream's body (a pooled connection that did not come in time while
the run was handed over) ends the stream with a RUN_ERROR (agents/agui/relay.closed_on_error): past
its first frame Daphne can send no error page, and the client's response stayed open and silent
until its own timeout."""

import asyncio
import json

from agents.agui.relay import closed_on_error, frame


def _collect(body):
    async def read():
        return [chunk async for chunk in body]
    return asyncio.run(read())


def _types(chunks):
    return [json.loads(line[6:])["type"] for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]


def _failing(*frames, closed=None):
    async def body():
        try:
            for payload in frames:
                yield frame(json.dumps(payload, separators=(",", ":")))  # as events.encode writes them
            raise RuntimeError("couldn't get a connection after 10.00 sec")
        finally:
            if closed is not None:
                closed.append(True)
    return body()


def test_a_stream_that_fails_after_its_start_ends_with_a_run_error():
    closed = []
    chunks = _collect(closed_on_error(_failing({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, closed=closed),
                                      "t", "r"))
    assert _types(chunks) == ["RUN_STARTED", "RUN_ERROR"]
    error = json.loads(chunks[-1].strip()[6:])
    assert error["code"] == "stream_failed" and error["message"].startswith("The server lost this stream")
    assert closed == [True]


def test_one_that_fails_before_anything_was_sent_starts_the_run_first():
    chunks = _collect(closed_on_error(_failing(), "t", "r"))
    assert _types(chunks) == ["RUN_STARTED", "RUN_ERROR"]
    assert json.loads(chunks[0].split("\n")[0][6:])["runId"] == "r"


def test_one_that_fails_after_its_run_ended_just_ends():
    ended = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "RUN_FINISHED", "threadId": "t",
                                                                        "runId": "r"}]
    assert _types(_collect(closed_on_error(_failing(*ended), "t", "r"))) == ["RUN_STARTED", "RUN_FINISHED"]


def test_a_client_going_away_closes_the_body_at_once():
    closed = []

    async def scenario():
        async def body():
            try:
                yield frame('{"type":"RUN_STARTED"}')
                await asyncio.sleep(60)
                yield frame('{"type":"RUN_FINISHED"}')
            finally:
                closed.append(True)
        stream = closed_on_error(body(), "t", "r")
        assert "RUN_STARTED" in await stream.__anext__()
        await stream.aclose()
    asyncio.run(scenario())
    assert closed == [True]
