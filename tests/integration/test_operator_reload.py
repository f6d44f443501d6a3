"""Live reload of policies in the real gateway process: under traffic, on file change and on SIGHUP."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from gateway_harness import Proc, gateway, text_of, upstream_server
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio

LINK_FORM = {
    "mode": "form",
    "message": "Read https://evil.example/phish first",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
KEEP_LINKS = {"modes": ["form"], "form_urls": "allow"}
STRIP_LINKS = {"modes": ["form"], "form_urls": "strip"}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reload")


@pytest.fixture(scope="module")
def gw(tmp: Path) -> Iterator[Proc]:
    with upstream_server(tmp) as up:
        servers = {"main": (up.base + "/mcp", KEEP_LINKS)}
        with gateway(tmp, servers, extra={"reload": {"watch": True, "poll_seconds": 0.2}}) as g:
            yield g


def write_atomically(path: Path, text: str) -> None:
    part = path.with_suffix(".part")
    part.write_text(text)
    os.replace(part, path)


def write_policy(tmp: Path, policy: dict[str, Any]) -> None:
    write_atomically(tmp / "policy-main.yaml", yaml.safe_dump({"elicitation": policy}))


def log_events(gw: Proc, event: str) -> list[dict[str, Any]]:
    out = []
    for line in gw.output().splitlines():
        if f'"event":"{event}"' in line:
            out.append(json.loads(line))
    return out


async def wait_for_event(gw: Proc, event: str, count: int, timeout: float = 10.0,
                         where: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """The `count`-th `event` line (counting only those `where` accepts, if given)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in log_events(gw, event) if where is None or where(e)]
        if len(found) >= count:
            return found[count - 1]
        await anyio.sleep(0.05)
    raise AssertionError(f"no {event} #{count} in the log:\n{gw.output()[-3000:]}")


class Host:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.messages.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ann"})


async def test_file_change_swaps_policy_under_live_traffic_without_a_failed_request(gw: Proc, tmp: Path) -> None:
    results: list[tuple[float, float, str, bool]] = []  # (started, ended, worker, link kept) per elicitation
    failures: list[str] = []
    stop = anyio.Event()

    async def worker(name: str) -> None:
        host = Host()
        # One session per worker across the reload: sessions survive it.
        async with Client(f"{gw.base}/servers/main/mcp", mode="legacy", elicitation_callback=host) as client:
            while not stop.is_set():
                started = time.monotonic()
                result = await client.call_tool("elicit_raw", {"params_json": json.dumps(LINK_FORM)})
                block = result.content[0]
                assert isinstance(block, TextContent)
                out = json.loads(block.text)
                if result.is_error or "result" not in out or out["result"].get("action") != "accept":
                    failures.append(f"{name}: {block.text}")
                    continue
                echoed = await client.call_tool("echo", {"text": name})
                if echoed.is_error:
                    failures.append(f"{name}: echo failed")
                results.append((started, time.monotonic(), name, "evil.example" in host.messages[-1]))

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(worker, f"w{i}")
        while len(results) < 8:  # traffic under way with the old policy
            await anyio.sleep(0.05)
        written_at = time.monotonic()
        write_policy(tmp, STRIP_LINKS)
        reloaded = await wait_for_event(gw, "config.reloaded", 1)
        swapped_at = time.monotonic()
        with anyio.move_on_after(15):  # every worker's session goes on under the new policy
            while {w for started, _, w, _ in results if started > swapped_at} != {"w0", "w1", "w2", "w3"}:
                await anyio.sleep(0.05)
        stop.set()

    assert failures == []
    assert reloaded["trigger"] == "file_changed"
    assert reloaded["changes"] == {"main": ["elicitation.form_urls"]}
    # Calls answered before the file changed saw the old policy; calls begun after the reload was
    # logged (the swap happens before that line) see the new one.
    before = [kept for _, ended, _, kept in results if ended < written_at]
    after = [kept for started, _, _, kept in results if started > swapped_at]
    assert before and all(before), "the old policy kept links"
    assert after and not any(after), "the new policy strips them"
    assert {w for started, _, w, _ in results if started > swapped_at} == {"w0", "w1", "w2", "w3"}
    assert {e["reason"] for e in log_events(gw, "session.ended")} <= {"host_delete"}  # only the hosts ended them


async def test_bad_files_keep_the_old_policy_and_the_log_says_why(gw: Proc, tmp: Path) -> None:
    write_policy(tmp, STRIP_LINKS)  # the policy in effect after the test above (or set now)
    await anyio.sleep(0.5)
    host = Host()
    client = Client(f"{gw.base}/servers/main/mcp", mode="legacy", elicitation_callback=host)
    async with client:
        failed_before = len(log_events(gw, "config.reload_failed"))
        write_policy(tmp, {**KEEP_LINKS, "form_urls": "sometimes"})  # not a valid value
        gw.process.send_signal(signal.SIGHUP)
        failed = await wait_for_event(gw, "config.reload_failed", failed_before + 1)
        assert failed["key"] == "elicitation.form_urls" and failed["file"].endswith("policy-main.yaml")
        assert failed["kept"] == "previous policies" and failed["level"] == "error"

        # The watcher may also reload the bad value above (a second failure for the same file): the YAML
        # failure is found by what it says, not by its place in the log.
        yaml_failed_before = len([e for e in log_events(gw, "config.reload_failed") if "invalid YAML" in e["problem"]])
        write_atomically(tmp / "policy-main.yaml", "elicitation: {form_urls: allow\n")  # not YAML
        failed = await wait_for_event(gw, "config.reload_failed", yaml_failed_before + 1,
                                      where=lambda e: "invalid YAML" in e["problem"])
        assert failed["key"] is None and failed["kept"] == "previous policies"

        await client.call_tool("elicit_raw", {"params_json": json.dumps(LINK_FORM)})
        assert "evil.example" not in host.messages[-1], "the old policy (strip) is still in effect"

        # A good file again, by SIGHUP this time: applied.
        applied_before = len(log_events(gw, "config.reloaded"))
        write_policy(tmp, KEEP_LINKS)
        gw.process.send_signal(signal.SIGHUP)
        await wait_for_event(gw, "config.reloaded", applied_before + 1)
        await client.call_tool("elicit_raw", {"params_json": json.dumps(LINK_FORM)})
        assert "evil.example" in host.messages[-1]


async def test_changes_that_need_a_restart_are_reported_not_applied(gw: Proc, tmp: Path) -> None:
    config_path = tmp / "gateway.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["listen"]["port"] = 1
    config["servers"]["main"]["headers"] = {"Authorization": "Bearer s3cr3t-t0ken"}
    write_atomically(config_path, yaml.safe_dump(config))
    gw.process.send_signal(signal.SIGHUP)
    restart = await wait_for_event(gw, "config.restart_required", 1)
    assert restart["keys"] == ["listen.port"]
    replaced = await wait_for_event(gw, "config.servers_changed", 1)  # the server's headers: applied live
    assert replaced["replaced"] == {"main": ["headers.Authorization"]}
    assert "s3cr3t-t0ken" not in gw.output()
    async with Client(f"{gw.base}/servers/main/mcp", mode="legacy") as client:  # still serving on its port
        await client.call_tool("echo", {"text": "still here"})


async def test_servers_added_removed_and_re_pointed_by_a_reload(tmp_path: Path) -> None:
    """Under live traffic: an added server is served at once (per-server and on /mcp), a removed one
    answers 404, and a re-pointed one serves new sessions from its new upstream while its old
    sessions are no longer found."""
    with upstream_server(tmp_path, "one") as one, upstream_server(tmp_path, "two") as two:
        servers = {"main": (one.base + "/mcp", KEEP_LINKS)}
        with gateway(tmp_path, servers, extra={"reload": {"watch": False}}) as g:
            config_path = tmp_path / "gateway.yaml"

            def reload_with(change: Any) -> None:
                config = yaml.safe_load(config_path.read_text())
                change(config["servers"])
                write_atomically(config_path, yaml.safe_dump(config))
                g.process.send_signal(signal.SIGHUP)

            old = Client(f"{g.base}/servers/main/mcp", mode="legacy")
            await old.__aenter__()
            try:
                reload_with(lambda s: s.update(extra={"url": two.base + "/mcp", "policy": s["main"]["policy"]}))
                await wait_for_event(g, "config.servers_changed", 1)
                async with Client(f"{g.base}/servers/extra/mcp", mode="legacy") as client:
                    assert text_of(await client.call_tool("echo", {"text": "added"})) == "added"
                async with Client(f"{g.base}/mcp", mode="legacy") as client:
                    names = {t.name for t in (await client.list_tools()).tools}
                assert {"main__echo", "extra__echo"} <= names
                assert text_of(await old.call_tool("echo", {"text": "untouched"})) == "untouched"

                reload_with(lambda s: s["main"].update(url=two.base + "/mcp"))  # re-pointed
                await wait_for_event(g, "config.servers_changed", 2)
                with pytest.raises(MCPError, match="Session not found"):  # its upstream is not the new one
                    await old.call_tool("echo", {"text": "old session"})
                async with Client(f"{g.base}/servers/main/mcp", mode="legacy") as client:
                    assert text_of(await client.call_tool("echo", {"text": "new"})) == "new"

                reload_with(lambda s: s.pop("extra"))
                await wait_for_event(g, "config.servers_changed", 3)
                async with httpx2.AsyncClient() as http:
                    gone = await http.post(f"{g.base}/servers/extra/mcp", json={}, headers={
                        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
                assert gone.status_code == 404
            finally:
                with contextlib.suppress(Exception):
                    await old.__aexit__(None, None, None)
        changes = [e for e in log_events(g, "config.servers_changed")]
        assert [c["added"] for c in changes] == [["extra"], [], []]
        assert [c["removed"] for c in changes] == [[], [], ["extra"]]
        assert changes[1]["replaced"] == {"main": ["url"]}
