"""The server's run hook takes the keywords a later executor may add, as every hook must
(``RunHook``: each method also takes ``**kwargs``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from modrag_studio.server.runs import _QueueHook


def test_the_queue_hook_accepts_keywords_it_does_not_know() -> None:
    loop = asyncio.new_event_loop()
    try:
        queue: asyncio.Queue = asyncio.Queue()
        hook = _QueueHook(loop, queue)
        hook.on_node_start(run_id="r", node_id="n", type_id="t", iteration=0, later=1)
        hook.on_node_stream(run_id="r", node_id="n", text="hi", later=1)
        visit = SimpleNamespace(node_id="n", type_id="t", iteration=0, status="done",
                                duration_s=0.1, cached=False, error=None)
        hook.on_node_end(run_id="r", visit=visit, inputs={}, outputs={}, later=1)
        loop.run_until_complete(asyncio.sleep(0))
        events = [queue.get_nowait()[0] for _ in range(queue.qsize())]
        assert events == ["node_started", "token", "node_finished"]
    finally:
        loop.close()
