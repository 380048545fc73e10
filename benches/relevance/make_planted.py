#!/usr/bin/env python3
"""Writes benches/relevance/planted/: hand-written pi v3 sessions that hold the answers of
generated.json. `sessiondex-bench relevance` copies them into the `gen --seed 42` corpus, whose
generated sessions are the distractors. Run from benches/relevance/ after editing; the output
is committed, so the benchmark never depends on this script."""
import json, os

OUT = "planted/.pi/agent/sessions"

def session(sid, cwd, start, turns):
    """turns: list of (kind, id, payload). kinds: user, assistant(text, calls), result."""
    d = f"{OUT}/--{cwd.strip('/').replace('/', '-')}--"
    os.makedirs(d, exist_ok=True)
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": start, "cwd": cwd}]
    parent = None
    base = start[:17]
    sec = int(start[17:19])
    for n, (kind, eid, p) in enumerate(turns):
        ts = f"{base}{(sec + n) % 60:02d}.000Z"
        if kind == "user":
            msg = {"role": "user", "content": [{"type": "text", "text": p}]}
        elif kind == "assistant":
            text, calls = p
            content = [{"type": "text", "text": text}] if text else []
            for cid, name, args in calls:
                content.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
            msg = {"role": "assistant", "content": content, "provider": "anthropic",
                   "model": "claude-sonnet-4-5", "stopReason": "toolUse" if calls else "stop"}
        else:
            cid, name, text, err = p
            msg = {"role": "toolResult", "toolCallId": cid, "toolName": name, "isError": err,
                   "content": [{"type": "text", "text": text}]}
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": ts,
                      "message": msg})
        parent = eid
    name = f"{start.replace(':', '-').replace('.', '-')}_{sid}.jsonl"
    with open(f"{d}/{name}", "w") as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False) + "\n")

LONG_LOG = "\n".join(
    f"2025-03-02T10:{i // 60:02d}:{i % 60:02d}Z INFO worker_pool: batch {i} processed in {40 + i % 17} ms"
    for i in range(220))

# 1. An old, long session: the answers that sit in older and longer entries.
session("rel-old-0001", "/home/dev/shop", "2025-03-02T10:00:00.000Z", [
    ("user", "o1", "The nightly job on the shop backend crashes after about twenty minutes, please investigate."),
    ("assistant", "o2", ("Reading the worker logs first.", [("c1", "bash", {"command": "journalctl -u shop-worker --since yesterday"})])),
    ("result", "o3", ("c1", "bash", LONG_LOG + "\n2025-03-02T10:21:07Z ERROR worker_pool: thread 'worker-3' panicked at 'called `Option::unwrap()` on a `None` value', src/jobs/reindex.rs:88:41\nerror[E0382]: borrow of moved value: `batch` reported by the debug build\nSHOP-4471 nightly reindex aborted", True)),
    ("assistant", "o4", ("The reindex job unwraps a missing batch cursor at src/jobs/reindex.rs:88. Filed as SHOP-4471; the fix is to treat an empty cursor as the end of the batch instead of panicking. " + " ".join(["Details of the investigation follow: the cursor is stored per shard and expires after the retention window, so long runs see it vanish."] * 6), [])),
    ("assistant", "o5", ("Patching the cursor handling.", [("c2", "edit", {"path": "src/jobs/reindex.rs", "oldText": "let cursor = batch.cursor.unwrap();", "newText": "let Some(cursor) = batch.cursor else { return Ok(Done) };"})])),
    ("result", "o6", ("c2", "edit", "edited src/jobs/reindex.rs", False)),
    ("user", "o7", "Also, the login test has been failing on CI since Tuesday."),
    ("assistant", "o8", ("Running the auth tests.", [("c3", "bash", {"command": "cargo test -p shop-auth login_redirects_to_dashboard"})])),
    ("result", "o9", ("c3", "bash", "running 1 test\ntest login::login_redirects_to_dashboard ... FAILED\n\nfailures:\n---- login::login_redirects_to_dashboard stdout ----\nthread 'login::login_redirects_to_dashboard' panicked at tests/login.rs:42:5:\nassertion `left == right` failed\n  left: 302\n right: 200\nerror: test failed, to rerun pass `-p shop-auth --test login`", True)),
    ("assistant", "o10", ("The session cookie is set with SameSite=Strict, so the redirect after the OAuth callback drops it and the dashboard answers 302 back to /login. Changing it to Lax in src/auth/cookie.rs fixes the failing login test.", [("c4", "edit", {"path": "src/auth/cookie.rs", "oldText": "SameSite::Strict", "newText": "SameSite::Lax"})])),
    ("result", "o11", ("c4", "edit", "edited src/auth/cookie.rs", False)),
    ("assistant", "o12", ("Rerunning the login test.", [("c5", "bash", {"command": "cargo test -p shop-auth login_redirects_to_dashboard"})])),
    ("result", "o13", ("c5", "bash", "running 1 test\ntest login::login_redirects_to_dashboard ... ok\n\ntest result: ok. 1 passed; 0 failed", False)),
])

# 2. A newer session full of distractors: the same words, not the answers.
session("rel-new-0002", "/home/dev/shop", "2026-10-20T09:00:00.000Z", [
    ("user", "n1", "Write a short note on SHOP tickets 4471 and 4470 for the weekly report; the login page copy also needs a test."),
    ("assistant", "n2", ("The report mentions SHOP and then ticket 4471, the nightly job and the login test; none of them are fixed in this session.", [])),
    ("user", "n3", "Which test is failing? List the tests about login and the dashboard redirect."),
    ("assistant", "n4", ("Listing tests.", [("d1", "bash", {"command": "cargo test -p shop-auth -- --list"})])),
    ("result", "n5", ("d1", "bash", "login::login_page_renders: test\nlogin::dashboard_after_login: test\nlogin::redirect_keeps_query: test\n3 tests, 0 benchmarks", False)),
    ("assistant", "n6", ("There is a borrow of moved value warning mentioned in the docs; error codes like E0382 are explained in the rustc book. The reindex module lives in src/jobs/, next to src/jobs/export.rs.", [])),
    ("assistant", "n7", ("Reading the export job.", [("d2", "read", {"path": "src/jobs/export.rs"})])),
    ("result", "n8", ("d2", "read", "pub fn export(batch: &Batch) -> Result<()> {\n    // unwrap the cursor of the batch later\n    let cursor = batch.cursor.clone();\n    write_rows(cursor)\n}", False)),
    ("user", "n9", "ok, and the deploy script? it printed connection refused yesterday, but that was the staging database being down."),
    ("assistant", "n10", ("Right, the connection refused on staging was the database restart, nothing to fix.", [])),
])

# 3. A session with identifiers, paths and tool outcomes.
session("rel-ops-0003", "/home/dev/payments", "2025-11-14T16:30:00.000Z", [
    ("user", "p1", "Deploy of payments failed with exit code 137, can you look? Commit 9f2c4e1a7b3d was the last green one."),
    ("assistant", "p2", ("Checking the container logs.", [("e1", "bash", {"command": "kubectl logs deploy/payments-api --previous"})])),
    ("result", "p3", ("e1", "bash", "Killed\ncontainer payments-api terminated: OOMKilled (exit code 137)\nmemory limit 512Mi exceeded by ledger::rebuild_index", True)),
    ("assistant", "p4", ("The pod was OOMKilled: ledger::rebuild_index loads every ledger row at startup. Raising the limit is a stopgap; streaming the rebuild is the fix.", [("e2", "edit", {"path": "deploy/k8s/payments-api.yaml", "oldText": "memory: 512Mi", "newText": "memory: 1Gi"})])),
    ("result", "p5", ("e2", "edit", "edited deploy/k8s/payments-api.yaml", False)),
    ("user", "p6", "Where is the webhook signature checked? We get 'invalid signature: timestamp outside tolerance' from Stripe events."),
    ("assistant", "p7", ("Searching for the verifier.", [("e3", "grep", {"pattern": "verify_signature", "path": "src"})])),
    ("result", "p8", ("e3", "grep", "src/webhooks/stripe_verify.rs:31: pub fn verify_signature(header: &str, body: &[u8], secret: &str) -> Result<(), SigError> {\nsrc/webhooks/mod.rs:12: use stripe_verify::verify_signature;", False)),
    ("assistant", "p9", ("The tolerance is 300 s in src/webhooks/stripe_verify.rs; our worker clock was 7 minutes behind after the node restart, so every event fell outside it. Enabling chrony on the workers fixed the drift.", [])),
    ("assistant", "p10", ("Running the migration for the refunds table.", [("e4", "bash", {"command": "sqlx migrate run --source migrations/payments"})])),
    ("result", "p11", ("e4", "bash", "Applied 20251114_add_refund_reason.sql\nerror: while executing migration 20251114_add_refund_reason: column \"reason\" of relation \"refunds\" already exists", True)),
    ("assistant", "p12", ("The column was added by hand on staging; the migration now uses ADD COLUMN IF NOT EXISTS.", [("e5", "edit", {"path": "migrations/payments/20251114_add_refund_reason.sql", "oldText": "ADD COLUMN reason", "newText": "ADD COLUMN IF NOT EXISTS reason"})])),
    ("result", "p13", ("e5", "edit", "edited migrations/payments/20251114_add_refund_reason.sql", False)),
    ("user", "p14", "Thanks. Link this to issue #2291 please."),
    ("assistant", "p15", ("Commenting on the issue.", [("e6", "gh", {"command": "gh issue comment 2291 --body 'fixed by IF NOT EXISTS'"})])),
    ("result", "p16", ("e6", "gh", "https://github.com/acme/payments/issues/2291#issuecomment-1849", False)),
    ("assistant", "p17", ("Pushing the branch.", [("e7", "bash", {"command": "git push origin fix/refund-reason"})])),
    ("result", "p18", ("e7", "bash", "To github.com:acme/payments.git\n ! [rejected]        fix/refund-reason -> fix/refund-reason (non-fast-forward)\nerror: failed to push some refs", True)),
    ("assistant", "p19", ("The push was rejected as non-fast-forward; rebasing on origin first.", [("e8", "bash", {"command": "git pull --rebase origin fix/refund-reason && git push origin fix/refund-reason"})])),
    ("result", "p20", ("e8", "bash", "Successfully rebased and updated refs/heads/fix/refund-reason.\nTo github.com:acme/payments.git\n   4be1c2d..77a9e03  fix/refund-reason -> fix/refund-reason", False)),
])

# 4. A session where the answer is in a tool output and the question is phrased differently.
session("rel-web-0004", "/home/dev/frontend", "2025-08-05T11:00:00.000Z", [
    ("user", "w1", "The checkout page is blank in Safari only."),
    ("assistant", "w2", ("Building with source maps to see the error.", [("f1", "bash", {"command": "npm run build -- --sourcemap"})])),
    ("result", "w3", ("f1", "bash", "vite v5.2.0 building for production...\n✓ 812 modules transformed.\nwarning: src/checkout/CheckoutForm.tsx uses Array.prototype.findLast, which Safari 15 does not support\nbuild done in 14.2s", False)),
    ("assistant", "w4", ("findLast is missing in Safari 15; replacing it with a reversed find in src/checkout/CheckoutForm.tsx.", [("f2", "edit", {"path": "src/checkout/CheckoutForm.tsx", "oldText": "items.findLast(isValid)", "newText": "[...items].reverse().find(isValid)"})])),
    ("result", "w5", ("f2", "edit", "edited src/checkout/CheckoutForm.tsx", False)),
    ("user", "w6", "Now the unit tests time out in jsdom."),
    ("assistant", "w7", ("Running them.", [("f3", "bash", {"command": "npx vitest run src/checkout"})])),
    ("result", "w8", ("f3", "bash", "FAIL src/checkout/CheckoutForm.test.tsx > submits the order\nError: Test timed out in 5000ms.\nIf this is a long-running test, pass a timeout value as the last argument or configure it globally with \"testTimeout\".", True)),
    ("assistant", "w9", ("The test awaits a real fetch; mocking the payment endpoint with msw makes it finish in 40 ms.", [])),
    ("user", "w10", "Rename the helper useCartTotals to useCartSummary everywhere."),
    ("assistant", "w11", ("Renaming.", [("f4", "bash", {"command": "grep -rl useCartTotals src | xargs sed -i 's/useCartTotals/useCartSummary/g'"})])),
    ("result", "w12", ("f4", "bash", "", False)),
])
