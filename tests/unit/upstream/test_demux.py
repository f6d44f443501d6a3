"""Demux: per-request streams rebuilt from one channel; the bound on requests awaiting an answer."""

from __future__ import annotations

import pytest

from gateway.errors import UPSTREAM_STREAM_LOST, UPSTREAM_UNREACHABLE, UpstreamFailure
from gateway.upstream.demux import Demux

pytestmark = pytest.mark.anyio


async def test_responses_end_their_own_stream_and_server_messages_go_to_the_newest() -> None:
    demux = Demux("s")
    k1, first = demux.open_request(1)
    _, second = demux.open_request("1")  # a string id is another request
    await demux.dispatch({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
    await demux.dispatch({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert [m async for m in first.drain()] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert first.answer == {"jsonrpc": "2.0", "id": 1, "result": {}} and k1 not in demux.streams
    assert second.queue.get_nowait()["method"] == "notifications/progress"


async def test_bound_requests_awaiting_an_answer() -> None:
    demux = Demux("s", max_pending=2)
    demux.open_request(1)
    demux.open_request(2)
    with pytest.raises(UpstreamFailure, match="2 requests of this session already await an answer") as full:
        demux.open_request(3)
    assert full.value.code == UPSTREAM_UNREACHABLE and full.value.status == 503


async def test_a_failed_channel_fails_open_streams_and_every_later_one() -> None:
    demux = Demux("s")
    _, stream = demux.open_request(1)
    demux.fail(UpstreamFailure(UPSTREAM_STREAM_LOST, "gone"))
    with pytest.raises(UpstreamFailure, match="gone"):
        [m async for m in stream.drain()]
    with pytest.raises(UpstreamFailure, match="gone"):
        demux.open_standalone()


async def test_a_second_request_with_an_id_still_awaiting_its_answer_is_refused() -> None:
    demux = Demux("s")
    demux.open_request(1)
    with pytest.raises(UpstreamFailure, match="already awaits its answer"):
        demux.open_request(1)
    await demux.dispatch({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})  # routing intact
