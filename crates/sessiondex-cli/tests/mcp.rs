//! `sessiondex mcp` spoken to in raw JSON-RPC lines on stdin: malformed messages, unknown tools
//! and bad arguments get protocol errors and the server keeps serving; failed calls are tool
//! errors with the stable code; the default scope is the server's `--cwd`; the background sync
//! finishes a build that a call never waits for. The Python SDK drives it in tests/mcp/.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// A new directory, removed with everything in it when dropped (a failing test too).
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("sdx-mcp-{name}-"))
        .tempdir()
        .unwrap()
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Directories removed after the server is stopped (fields drop after `Drop::drop`).
    dirs: Vec<tempfile::TempDir>,
}

impl Server {
    fn start(args: &[&str], sources: &[&Path], index: &Path) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sessiondex"));
        cmd.arg("mcp").args(args).arg("--index-dir").arg(index);
        for s in sources {
            cmd.arg("--source").arg(s);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut server = Server {
            child,
            stdin,
            lines: rx,
            next_id: 100,
            dirs: Vec::new(),
        };
        let init = server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "sessiondex", "{init}");
        server.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message on stdout.
    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {e}: {line}"))
    }

    /// Sends a request and returns the response with its id (anything else must not come
    /// first: the tests send one request at a time).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&msg.to_string());
        let answer = self.recv();
        assert_eq!(answer["id"], json!(id), "{answer}");
        answer
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// A successful tool call's JSON object.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments);
        let result = &answer["result"];
        assert_eq!(result["isError"], json!(false), "{answer}");
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    /// A tool error's `{"error": {...}}`.
    fn tool_error(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments);
        let result = &answer["result"];
        assert_eq!(result["isError"], json!(true), "{answer}");
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    /// A JSON-RPC error to a tool call.
    fn protocol_error(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments);
        assert!(answer.get("result").is_none(), "{answer}");
        answer["error"].clone()
    }

    /// Closes stdin: the server exits 0.
    fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                return;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn examples(name: &str) -> Server {
    let index = temp_dir(name);
    let mut server = Server::start(
        &["--cwd", "/home/dev/webapp"],
        &[&repo("examples/sessions")],
        index.path(),
    );
    server.dirs.push(index);
    server
}

fn assert_tools_listed(server: &mut Server) {
    let list = server.request("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["recall", "expand", "sessions", "call"]);
}

#[test]
fn malformed_json_rpc_gets_protocol_errors_and_the_server_keeps_serving() {
    let mut server = examples("malformed");
    // Not JSON at all: a parse error, id null.
    server.send_line("this is not json");
    let e = server.recv();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null);
    server.send_line(r#"{"jsonrpc": "2.0", "id": 5, "method": "tools/list""#);
    assert_eq!(server.recv()["error"]["code"], -32700);
    // JSON, but not a JSON-RPC message: an invalid request.
    server.send_line(r#"{"hello": "world"}"#);
    assert_eq!(server.recv()["error"]["code"], -32600);
    server.send_line("[1, 2, 3]");
    assert_eq!(server.recv()["error"]["code"], -32600);
    // Blank lines are ignored; the next request is answered.
    server.send_line("");
    assert_tools_listed(&mut server);
    // An unknown method.
    let e = server.request("tools/delete", json!({}));
    assert_eq!(e["error"]["code"], -32601, "{e}");
    assert_tools_listed(&mut server);
    server.stop();
}

#[test]
fn unknown_tools_and_bad_arguments_are_invalid_params_with_the_code() {
    let mut server = examples("badargs");
    let e = server.protocol_error("forget", json!({}));
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(
        e["data"]["tools"],
        json!(["recall", "expand", "sessions", "call"])
    );
    let cases = [
        ("recall", json!({"bogus": 1}), "invalid_request"),
        ("recall", json!({"pageSize": "ten"}), "invalid_request"),
        ("recall", json!({"scope": "everywhere"}), "invalid_scope"),
        (
            "recall",
            json!({"queryMode": "semantic", "query": "x"}),
            "invalid_query_mode",
        ),
        ("expand", json!({"indices": [0]}), "invalid_request"),
        ("call", json!({"ref": "delete", "args": {}}), "invalid_call"),
        ("call", json!({"ref": "recall"}), "invalid_call"),
        ("sessions", json!({"scope": "session"}), "invalid_scope"),
        ("sessions", json!({"limit": -1}), "invalid_request"),
    ];
    for (tool, args, code) in cases {
        let e = server.protocol_error(tool, args.clone());
        assert_eq!(e["code"], -32602, "{tool} {args}: {e}");
        assert_eq!(e["data"]["error"]["code"], code, "{tool} {args}: {e}");
    }
    // Still serving: a good call is answered.
    let page = server.ok("recall", json!({"query": "timeout"}));
    assert_eq!(page["total"], 2, "{page}");
    server.stop();
}

#[test]
fn failed_calls_are_tool_errors_with_the_stable_code() {
    let mut server = examples("toolerr");
    let e = server.tool_error(
        "expand",
        json!({"session": "019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f", "indices": [999]}),
    );
    assert_eq!(e["error"]["code"], "index_out_of_bounds", "{e}");
    assert!(e["error"]["message"].is_string());
    let e = server.tool_error("recall", json!({"query": "x", "pageSize": 1000}));
    assert_eq!(e["error"]["code"], "invalid_request");
    let e = server.tool_error(
        "expand",
        json!({"session": "no-such-session", "indices": [0]}),
    );
    assert_eq!(e["error"]["code"], "session_not_found");
    // A follow whose binding no longer matches the source: stale_pointer.
    let page = server.ok("recall", json!({"query": "timeout", "pageSize": 1}));
    let mut follow = page["hits"][0]["follow"].clone();
    follow["args"]["sourceHash"] = json!("0".repeat(64));
    let e = server.tool_error("call", follow);
    assert_eq!(e["error"]["code"], "stale_pointer", "{e}");
    server.stop();
}

#[test]
fn results_are_the_json_objects_of_the_cli_and_the_scope_defaults_to_cwd() {
    let dir = temp_dir("results");
    let index = dir.path();
    let mut server = Server::start(
        &["--cwd", "/home/dev/webapp"],
        &[&repo("examples/sessions")],
        index,
    );
    let page = server.ok("recall", json!({"query": "timeout", "pageSize": 1}));
    assert_eq!(page["total"], 2);
    assert_eq!(page["coverage"]["complete"], true, "{page}");
    // The same page as `sessiondex recall --json` over the same project.
    let cli = Command::new(env!("CARGO_BIN_EXE_sessiondex"))
        .current_dir("/")
        .args(["recall", "timeout", "--page-size", "1", "--json"])
        .args(["--cwd", "/home/dev/webapp", "--source"])
        .arg(repo("examples/sessions"))
        .arg("--index-dir")
        .arg(index)
        .output()
        .unwrap();
    let mut cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    // (The CLI's `next` carries its --cwd; the server's call leaves cwd to the server.)
    assert_eq!(cli["next"]["args"]["cwd"], "/home/dev/webapp");
    let mut without_next = page.clone();
    without_next["next"] = Value::Null;
    cli["next"] = Value::Null;
    assert_eq!(without_next, cli);
    // Follow the hit, then the page's next, through `call`.
    let expansion = server.ok("call", page["hits"][0]["follow"].clone());
    assert_eq!(
        expansion["entries"].as_array().unwrap().len(),
        1,
        "{expansion}"
    );
    let second = server.ok("call", page["next"].clone());
    assert_eq!(second["hits"].as_array().unwrap().len(), 1);
    assert_eq!(second["next"], Value::Null);
    // Sessions: this project's by default, every project's with scope global.
    let listed = server.ok("sessions", json!({}));
    let total = listed["total"].as_u64().unwrap();
    assert!(total >= 1, "{listed}");
    for s in listed["sessions"].as_array().unwrap() {
        assert!(
            s["cwd"].as_str().unwrap().starts_with("/home/dev/webapp"),
            "{s}"
        );
    }
    let all = server.ok("sessions", json!({"scope": "global"}));
    assert_eq!(all["total"], 4, "{all}");
    server.stop();

    // Another project: nothing, and the coverage says that is authoritative.
    let mut server = Server::start(
        &["--cwd", "/home/dev/elsewhere"],
        &[&repo("examples/sessions")],
        index,
    );
    let page = server.ok("recall", json!({"query": "timeout"}));
    assert_eq!(page["total"], 0);
    assert_eq!(page["coverage"]["complete"], true, "{page}");
    assert_eq!(server.ok("sessions", json!({}))["total"], 0);
    let page = server.ok("recall", json!({"query": "timeout", "scope": "global"}));
    assert_eq!(page["total"], 2);
    server.stop();
}

#[test]
fn the_background_sync_finishes_a_build_that_calls_do_not_wait_for() {
    // 40 sessions, one indexed per round: the first call answers from what is indexed.
    let dir = temp_dir("corpus");
    let corpus = dir.path();
    let index = temp_dir("corpus-index");
    let pi = repo(
        "examples/sessions/pi/--home-dev-webapp--/2026-11-02T09-14-03-120Z_019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f.jsonl",
    );
    let text = std::fs::read_to_string(pi).unwrap();
    for i in 0..40 {
        let id = format!("019a4c1e-5b2f-7c3d-9e10-{i:012}");
        let session = text.replace("019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f", &id);
        std::fs::write(corpus.join(format!("s{i:02}_{id}.jsonl")), session).unwrap();
    }
    let mut server = Server::start(
        &["--cwd", "/home/dev/webapp", "--max-sync-sessions", "1"],
        &[corpus],
        index.path(),
    );
    let first = server.ok("recall", json!({"query": "checkout", "scope": "global"}));
    let c = &first["coverage"];
    assert_eq!(c["eligibleSessions"], 40, "{first}");
    if c["complete"] == false {
        assert!(
            c["reasons"]
                .as_array()
                .unwrap()
                .contains(&json!("max_sync_sessions")),
            "{c}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = server.ok("recall", json!({"query": "checkout", "scope": "global"}));
        if page["coverage"]["complete"] == true {
            assert_eq!(page["coverage"]["indexedSessions"], 40, "{page}");
            break;
        }
        assert!(Instant::now() < deadline, "never complete: {page}");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();
}
