"""Writes the example corpus in examples/sessions/ (one small session per format).

The sessions are written for this project: a developer chasing a flaky HTTP timeout in a
small web service. Run `python3 examples/gen_examples.py` to regenerate them.
"""
import json, os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sessions")

def write(rel, lines):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for obj in lines:
            f.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

# ---- pi v3: a tree with one rewound branch and a failed test run
pi = [
    {"type": "session", "version": 3, "id": "019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f",
     "timestamp": "2026-11-02T09:14:03.120Z", "cwd": "/home/dev/webapp"},
    {"type": "model_change", "id": "m0a1b2c3", "parentId": None, "timestamp": "2026-11-02T09:14:03.130Z",
     "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
    {"type": "message", "id": "u1000001", "parentId": "m0a1b2c3", "timestamp": "2026-11-02T09:14:10.000Z",
     "message": {"role": "user", "content": [{"type": "text", "text": "The checkout test times out about one run in five. Can you find why?"}], "timestamp": 1793610850000}},
    {"type": "message", "id": "a1000001", "parentId": "u1000001", "timestamp": "2026-11-02T09:14:15.000Z",
     "message": {"role": "assistant", "content": [
         {"type": "thinking", "thinking": "Probably the payment stub sleeps longer than the client timeout."},
         {"type": "text", "text": "Let me read the checkout client first."},
         {"type": "toolCall", "id": "call_read_1", "name": "read", "arguments": {"path": "src/checkout/client.ts"}}],
         "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse", "timestamp": 1793610855000}},
    {"type": "message", "id": "t1000001", "parentId": "a1000001", "timestamp": "2026-11-02T09:14:15.200Z",
     "message": {"role": "toolResult", "toolCallId": "call_read_1", "toolName": "read", "isError": False,
                 "content": [{"type": "text", "text": "export const CHECKOUT_TIMEOUT_MS = 2000;\nexport async function pay(order) {\n  return fetchWithTimeout('/pay', order, CHECKOUT_TIMEOUT_MS);\n}"}],
                 "timestamp": 1793610855200}},
    {"type": "message", "id": "a1000002", "parentId": "t1000001", "timestamp": "2026-11-02T09:14:20.000Z",
     "message": {"role": "assistant", "content": [
         {"type": "text", "text": "The client gives up after 2000 ms. Running the test to see the failure."},
         {"type": "toolCall", "id": "call_bash_1", "name": "bash", "arguments": {"command": "npm test -- checkout"}}],
         "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse", "timestamp": 1793610860000}},
    {"type": "message", "id": "t1000002", "parentId": "a1000002", "timestamp": "2026-11-02T09:14:31.000Z",
     "message": {"role": "toolResult", "toolCallId": "call_bash_1", "toolName": "bash", "isError": True,
                 "content": [{"type": "text", "text": "FAIL src/checkout/checkout.test.ts\n  pays an order: Error: ETIMEDOUT after 2000 ms (payment stub answered in 2350 ms)"}],
                 "timestamp": 1793610871000}},
    # the user rewinds and asks differently: a sibling branch of a1000002
    {"type": "message", "id": "u1000002", "parentId": "t1000001", "timestamp": "2026-11-02T09:15:02.000Z",
     "message": {"role": "user", "content": [{"type": "text", "text": "Don't run the suite, just look at the payment stub latency."}], "timestamp": 1793610902000}},
    {"type": "message", "id": "a1000003", "parentId": "u1000002", "timestamp": "2026-11-02T09:15:06.000Z",
     "message": {"role": "assistant", "content": [
         {"type": "toolCall", "id": "call_read_2", "name": "read", "arguments": {"path": "test/stubs/payment.ts"}}],
         "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse", "timestamp": 1793610906000}},
    {"type": "message", "id": "t1000003", "parentId": "a1000003", "timestamp": "2026-11-02T09:15:06.300Z",
     "message": {"role": "toolResult", "toolCallId": "call_read_2", "toolName": "read", "isError": False,
                 "content": [{"type": "text", "text": "const latency = 1500 + Math.random() * 1000; // jitter makes it flaky"}],
                 "timestamp": 1793610906300}},
    {"type": "message", "id": "a1000004", "parentId": "t1000003", "timestamp": "2026-11-02T09:15:12.000Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "The stub waits 1500-2500 ms while the client times out at 2000 ms, so about half the jitter range fails. Raise CHECKOUT_TIMEOUT_MS to 5000 in tests or make the stub deterministic."}],
                 "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 1793610912000}},
]
write("pi/--home-dev-webapp--/2026-11-02T09-14-03-120Z_019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f.jsonl", pi)

# ---- Claude Code: an edit, a failing build, a fix
sid = "3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d"
def cc(uuid, parent, ts, msg, typ=None, **extra):
    d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/webapp",
         "sessionId": sid, "version": "2.1.40", "gitBranch": "main", "type": typ or msg["role"],
         "message": msg, "uuid": uuid, "timestamp": ts}
    d.update(extra)
    return d
claude = [
    cc("c0000001-0000-4000-8000-000000000001", None, "2026-11-03T14:00:00.000Z",
       {"role": "user", "content": "Add retries with backoff to fetchWithTimeout in src/net/fetch.ts"}),
    cc("c0000001-0000-4000-8000-000000000002", "c0000001-0000-4000-8000-000000000001", "2026-11-03T14:00:05.000Z",
       {"id": "msg_01A", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
        "content": [{"type": "text", "text": "I'll add an exponential backoff loop around the fetch."},
                    {"type": "tool_use", "id": "toolu_edit_1", "name": "Edit",
                     "input": {"file_path": "/home/dev/webapp/src/net/fetch.ts", "old_string": "return await fetch(url, opts);",
                               "new_string": "for (let attempt = 0; ; attempt++) {\n  try { return await fetch(url, opts); }\n  catch (e) { if (attempt >= retries) throw e; await sleep(backoff(attempt)); }\n}"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 900, "output_tokens": 120}}, requestId="req_01"),
    cc("c0000001-0000-4000-8000-000000000003", "c0000001-0000-4000-8000-000000000002", "2026-11-03T14:00:06.000Z",
       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_edit_1", "content": "The file /home/dev/webapp/src/net/fetch.ts has been updated."}]},
       toolUseResult={"filePath": "/home/dev/webapp/src/net/fetch.ts"}),
    cc("c0000001-0000-4000-8000-000000000004", "c0000001-0000-4000-8000-000000000003", "2026-11-03T14:00:09.000Z",
       {"id": "msg_01B", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
        "content": [{"type": "tool_use", "id": "toolu_bash_1", "name": "Bash", "input": {"command": "npx tsc --noEmit", "description": "Type-check"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1100, "output_tokens": 40}}, requestId="req_02"),
    cc("c0000001-0000-4000-8000-000000000005", "c0000001-0000-4000-8000-000000000004", "2026-11-03T14:00:20.000Z",
       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_bash_1", "is_error": True,
                                     "content": "src/net/fetch.ts(14,39): error TS2304: Cannot find name 'backoff'."}]},
       toolUseResult="Error: src/net/fetch.ts(14,39): error TS2304: Cannot find name 'backoff'."),
    cc("c0000001-0000-4000-8000-000000000006", "c0000001-0000-4000-8000-000000000005", "2026-11-03T14:00:25.000Z",
       {"id": "msg_01C", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
        "content": [{"type": "text", "text": "backoff is not defined yet; adding it next to sleep in src/net/timing.ts."},
                    {"type": "tool_use", "id": "toolu_write_1", "name": "Write",
                     "input": {"file_path": "/home/dev/webapp/src/net/timing.ts", "content": "export const backoff = (n: number) => Math.min(100 * 2 ** n, 5000);\n"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1200, "output_tokens": 60}}, requestId="req_03"),
    cc("c0000001-0000-4000-8000-000000000007", "c0000001-0000-4000-8000-000000000006", "2026-11-03T14:00:26.000Z",
       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_write_1", "content": "File created successfully at: /home/dev/webapp/src/net/timing.ts"}]}),
    cc("c0000001-0000-4000-8000-000000000008", "c0000001-0000-4000-8000-000000000007", "2026-11-03T14:00:30.000Z",
       {"id": "msg_01D", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
        "content": [{"type": "text", "text": "Retries are in place: up to 3 attempts with exponential backoff capped at 5 s. The type check passes now."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 1300, "output_tokens": 30}}, requestId="req_04"),
    {"type": "summary", "summary": "Retry with backoff for fetchWithTimeout", "leafUuid": "c0000001-0000-4000-8000-000000000008"},
]
write("claude-code/-home-dev-webapp/" + sid + ".jsonl", claude)

# ---- Codex CLI envelope: a grep, a failing command, an apply_patch
codex_id = "019a5e2b-1c3d-7e4f-8a9b-0c1d2e3f4a5b"
def cx(ts, typ, payload):
    return {"timestamp": ts, "type": typ, "payload": payload}
codex = [
    cx("2026-11-04T08:30:00.000Z", "session_meta", {"id": codex_id, "timestamp": "2026-11-04T08:29:58.000Z",
        "cwd": "/home/dev/webapp", "originator": "codex_cli_rs", "cli_version": "0.130.0", "source": "cli",
        "model_provider": "openai", "base_instructions": {"text": "You are Codex, a coding agent."}}),
    cx("2026-11-04T08:30:01.000Z", "response_item", {"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "Why does the migration script fail on an empty database?"}]}),
    cx("2026-11-04T08:30:01.001Z", "event_msg", {"type": "user_message", "message": "Why does the migration script fail on an empty database?", "images": []}),
    cx("2026-11-04T08:30:03.000Z", "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look for the migration entry point."}], "encrypted_content": "gAAAA..."}),
    cx("2026-11-04T08:30:04.000Z", "response_item", {"type": "function_call", "name": "exec_command",
        "arguments": json.dumps({"cmd": "node scripts/migrate.js --db sqlite::memory:", "workdir": "/home/dev/webapp"}), "call_id": "call_mig_1"}),
    cx("2026-11-04T08:30:06.000Z", "event_msg", {"type": "exec_command_end", "call_id": "call_mig_1", "exit_code": 1,
        "stdout": "", "stderr": "Error: no such table: schema_version\n    at migrate (scripts/migrate.js:12:9)", "status": "failed", "duration": {"secs": 1, "nanos": 200000000}}),
    cx("2026-11-04T08:30:06.001Z", "response_item", {"type": "function_call_output", "call_id": "call_mig_1",
        "output": "Process exited with code 1\nError: no such table: schema_version\n    at migrate (scripts/migrate.js:12:9)"}),
    cx("2026-11-04T08:30:10.000Z", "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "call_patch_1", "name": "apply_patch",
        "input": "*** Begin Patch\n*** Update File: scripts/migrate.js\n@@\n-const v = db.get('SELECT v FROM schema_version');\n+db.run('CREATE TABLE IF NOT EXISTS schema_version (v INTEGER)');\n+const v = db.get('SELECT v FROM schema_version') ?? { v: 0 };\n*** End Patch\n"}),
    cx("2026-11-04T08:30:10.500Z", "response_item", {"type": "custom_tool_call_output", "call_id": "call_patch_1",
        "output": json.dumps({"output": "Success. Updated the following files:\nM scripts/migrate.js\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}})}),
    cx("2026-11-04T08:30:14.000Z", "response_item", {"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "On an empty database the schema_version table does not exist yet. The script now creates it first and treats a missing row as version 0."}]}),
]
write("codex/2026/11/04/rollout-2026-11-04T08-30-00-" + codex_id + ".jsonl", codex)

# ---- oh-my-pi: a 256-byte title slot before a v3 header, an MCP tool with a provider
omp_id = "019a6f3c-2d4e-7f50-9b1c-3d4e5f6a7b8c"
title = {"type": "title", "v": 1, "title": "File the flaky checkout timeout", "source": "auto",
         "updatedAt": "2026-11-05T16:20:09.000Z", "pad": ""}
line = json.dumps(title, separators=(",", ":"))
title["pad"] = " " * (255 - len(line))
omp = [
    title,
    {"type": "session", "version": 3, "id": omp_id, "timestamp": "2026-11-05T16:20:00.000Z",
     "cwd": "/home/dev/webapp", "title": "File the flaky checkout timeout"},
    {"type": "message", "id": "e1f2a3b4", "parentId": None, "timestamp": "2026-11-05T16:20:05.000Z",
     "message": {"role": "user", "content": [{"type": "text", "text": "Open an issue for the flaky checkout timeout we found on Monday."}], "timestamp": 1793895605000}},
    {"type": "message", "id": "e1f2a3b5", "parentId": "e1f2a3b4", "timestamp": "2026-11-05T16:20:09.000Z",
     "message": {"role": "assistant", "content": [
         {"type": "toolCall", "id": "call_gh_1", "name": "mcp__github__create_issue",
          "arguments": {"owner": "dev", "repo": "webapp", "title": "Checkout test flaky: payment stub jitter exceeds CHECKOUT_TIMEOUT_MS",
                        "body": "The payment stub waits 1500-2500 ms; the client times out at 2000 ms."}}],
         "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse", "timestamp": 1793895609000}},
    {"type": "message", "id": "e1f2a3b6", "parentId": "e1f2a3b5", "timestamp": "2026-11-05T16:20:11.000Z",
     "message": {"role": "toolResult", "toolCallId": "call_gh_1", "toolName": "mcp__github__create_issue", "isError": False,
                 "content": [{"type": "text", "text": "Created issue dev/webapp#412"}], "timestamp": 1793895611000}},
    {"type": "message", "id": "e1f2a3b7", "parentId": "e1f2a3b6", "timestamp": "2026-11-05T16:20:14.000Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "Filed dev/webapp#412 with the stub latency and the client timeout."}],
                 "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 1793895614000}},
]
write("omp/--home-dev-webapp--/2026-11-05T16-20-00-000Z_" + omp_id + ".jsonl", omp)
