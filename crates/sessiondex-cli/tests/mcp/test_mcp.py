"""`sessiondex mcp` driven by a real MCP client: the `mcp` Python SDK from PyPI.

Run by `make test-mcp`, which builds target/debug/sessiondex (or set SESSIONDEX_BIN).
Initialize, list the tools, recall over examples/sessions (and ../shared/fixtures/sessions
when it is beside the checkout), follow a hit through `call`, expand, and get structured
errors: a tool error carrying `index_out_of_bounds`, protocol errors for an unknown tool and
bad arguments, after which the server still answers.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[4]
EXAMPLES = REPO / "examples" / "sessions"
FIXTURES = REPO.parent / "shared" / "fixtures" / "sessions"
BIN = Path(os.environ.get("SESSIONDEX_BIN", REPO / "target" / "debug" / "sessiondex"))


def run(sources: list[Path], index: Path, body, cwd: str = "/home/dev/webapp"):
    """Starts the server over stdio, initializes, and runs `body(session, init)`."""
    args = ["mcp", "--index-dir", str(index), "--cwd", cwd]
    for s in sources:
        args += ["--source", str(s)]
    params = StdioServerParameters(command=str(BIN), args=args)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return await body(session, init)

    return asyncio.run(asyncio.wait_for(main(), timeout=120))


def text_json(result) -> dict:
    assert len(result.content) == 1
    return json.loads(result.content[0].text)


async def ok(session, tool: str, arguments: dict) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result
    return text_json(result)


def test_initialize_and_list_tools(tmp_path):
    async def body(session, init):
        assert init.server_info.name == "sessiondex"
        assert "coverage.complete" in init.instructions
        tools = (await session.list_tools()).tools
        by_name = {t.name: t for t in tools}
        assert list(by_name) == ["recall", "expand", "sessions", "call"]
        for t in tools:
            schema = t.input_schema
            assert schema["type"] == "object"
            assert schema["additionalProperties"] is False
            assert t.annotations.read_only_hint is True
        assert {"query", "scope", "queryMode", "pageSize"} <= set(by_name["recall"].input_schema["properties"])
        assert set(by_name["call"].input_schema["properties"]) == {"ref", "args"}
        recall = by_name["recall"].description
        assert "follow" in recall and "coverage.complete" in recall and "global" in recall
        assert "stale_pointer" in by_name["expand"].description
        assert "stale_pointer" in by_name["call"].description

    run([EXAMPLES], tmp_path, body)


def test_recall_follow_expand_and_structured_errors(tmp_path):
    async def body(session, init):
        # Recall in the server's project (the default scope).
        page = await ok(session, "recall", {"query": "timeout", "pageSize": 1})
        assert page["total"] == 2
        assert page["coverage"]["complete"] is True
        hit = page["hits"][0]
        assert hit["kind"] == "entry"
        assert "timeout" in hit["snippet"]["text"]
        # Follow the hit unchanged through `call`: the complete record.
        expansion = await ok(session, "call", hit["follow"])
        (entry,) = expansion["entries"]
        assert entry["index"] == hit["index"]
        assert "timeout" in entry["text"]
        # The next page, through `call` too.
        second = await ok(session, "call", page["next"])
        assert len(second["hits"]) == 1 and second["next"] is None
        # Expand directly, with context.
        around = await ok(session, "expand", {"session": hit["sessionId"], "indices": [1], "before": 1, "after": 1})
        assert [e["index"] for e in around["entries"]] == [0, 1, 2]
        entries = around["session"]["entries"]
        # Out of bounds: a tool error carrying the stable code.
        result = await session.call_tool("expand", {"session": hit["sessionId"], "indices": [entries + 5]})
        assert result.is_error is True
        error = text_json(result)["error"]
        assert error["code"] == "index_out_of_bounds"
        assert error["message"]
        # A follow whose session changed since (here: a forged hash) is stale_pointer.
        forged = json.loads(json.dumps(hit["follow"]))
        forged["args"]["sourceHash"] = "0" * 64
        result = await session.call_tool("call", forged)
        assert result.is_error and text_json(result)["error"]["code"] == "stale_pointer"
        # Protocol errors: an unknown tool, arguments of the wrong shape.
        with pytest.raises(MCPError) as e:
            await session.call_tool("forget", {})
        assert e.value.code == -32602
        with pytest.raises(MCPError) as e:
            await session.call_tool("recall", {"query": "x", "bogus": True})
        assert e.value.code == -32602
        assert e.value.data["error"]["code"] == "invalid_request"
        # ... and the server keeps serving.
        sessions = await ok(session, "sessions", {"scope": "global"})
        assert sessions["total"] == 4
        return True

    assert run([EXAMPLES], tmp_path, body)


def test_another_project_is_empty_and_says_it_is_authoritative(tmp_path):
    async def body(session, init):
        page = await ok(session, "recall", {"query": "timeout"})
        assert page["total"] == 0 and page["coverage"]["complete"] is True
        page = await ok(session, "recall", {"query": "timeout", "scope": "global"})
        assert page["total"] == 2

    run([EXAMPLES], tmp_path, body, cwd="/home/dev/elsewhere")


def test_real_fixtures(tmp_path):
    if not FIXTURES.is_dir():
        pytest.skip(f"no real fixtures at {FIXTURES}")

    async def body(session, init):
        listed = await ok(session, "sessions", {"scope": "global", "limit": 100})
        assert listed["total"] > 0
        assert len(json.dumps(listed)) < 30_000
        followed = 0
        for query in ["error", "test", "file"]:
            page = await ok(session, "recall", {"query": query, "scope": "global", "pageSize": 20})
            assert len(json.dumps(page, ensure_ascii=False)) < 30_000
            for hit in page["hits"][:3]:
                result = await session.call_tool("call", hit["follow"])
                assert not result.is_error, result
                answer = text_json(result)
                assert "entries" in answer or "hits" in answer
                followed += 1
        assert followed > 0
        return True

    assert run([EXAMPLES, FIXTURES], tmp_path, body)
