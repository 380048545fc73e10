#!/usr/bin/env bash
# Limits run (issue 8 point 6; docs/reliability.md, "Limits"): builds each hostile source tree
# under target/limits/ and runs the release CLI on it (`index`, `recall`, `sessions`, all with
# --json), measuring wall time and peak RSS of every child with GNU time. Not part of
# `make test` (the inputs take about 1 GB of disk and minutes to build).
#
#   cargo build --release -p sessiondex-cli
#   scripts/limits.sh                      # every case
#   scripts/limits.sh bigline symlink      # some: bigline million many symlink unreadable readonly
#
# Env: SESSIONDEX (binary, default target/release/sessiondex), LIMITS_DIR (default
# target/limits), BIG_MB (size of the single line, default 200), ENTRIES (default 1000000),
# FILES (default 100000). Running as root, the unreadable and read-only cases run the CLI as
# `nobody` (setpriv) so that file modes are enforced.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN=${SESSIONDEX:-$ROOT/target/release/sessiondex}
OUT=${LIMITS_DIR:-$ROOT/target/limits}
BIG_MB=${BIG_MB:-200}
ENTRIES=${ENTRIES:-1000000}
FILES=${FILES:-100000}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "GNU time missing: apt-get install -y time" >&2; exit 2; }
[ -x "$BIN" ] || { echo "no $BIN: cargo build --release -p sessiondex-cli" >&2; exit 2; }
mkdir -p "$OUT"
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(bigline million many symlink unreadable readonly)
AS=()
if [ "$(id -u)" = 0 ]; then AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups); else AS_NOBODY=(); fi

# Writes sessions for one case into $2 (python3: fast enough for 100,000 files or 200 MB).
gen() {
    python3 - "$@" <<'PY'
import json, os, sys
case, root = sys.argv[1], sys.argv[2]
big_mb, entries, files = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
os.makedirs(root, exist_ok=True)

def claude(sid, n, cwd, words):
    """A Claude Code session: n user/assistant pairs."""
    out, parent = [], None
    for i in range(2 * n):
        uid = f"{sid[:8]}-0000-4000-8000-{i:012d}"
        role = "user" if i % 2 == 0 else "assistant"
        content = words if role == "user" else [{"type": "text", "text": "ok " + words}]
        out.append(json.dumps({"parentUuid": parent, "isSidechain": False, "type": role,
            "cwd": cwd, "sessionId": sid, "version": "2.1.40",
            "message": {"role": role, "content": content}, "uuid": uid,
            "timestamp": f"2026-11-03T14:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"}))
        parent = uid
    return "\n".join(out) + "\n"

if case == "bigline":
    # One Claude Code file that is a single line: a user message of BIG_MB MB of words,
    # the planted term `limitneedle` first and last.
    path = os.path.join(root, "-home-dev-big", "b16b16b1-0000-4000-8000-000000000001.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    chunk = " ".join(f"w{i % 9973}x{i % 7}" for i in range(100_000)) + " "
    target = big_mb * 1_000_000
    with open(path, "w") as f:
        f.write('{"parentUuid":null,"isSidechain":false,"type":"user","cwd":"/home/dev/big",'
                '"sessionId":"b16b16b1-0000-4000-8000-000000000001","version":"2.1.40",'
                '"uuid":"b16b16b1-0000-4000-8000-000000000002","timestamp":"2026-11-03T14:00:00.000Z",'
                '"message":{"role":"user","content":"limitneedle ')
        written = 0
        while written < target:
            f.write(chunk); written += len(chunk)
        f.write('limitneedle"}}')  # no newline: the file is one line
elif case == "million":
    # One pi session of ENTRIES message entries, each the child of the one before.
    path = os.path.join(root, "--home-dev-million--", "2026-11-03T14-00-00-000Z_019a0000-0000-7000-8000-000000000001.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps({"type": "session", "version": 3, "id": "019a0000-0000-7000-8000-000000000001",
                            "timestamp": "2026-11-03T14:00:00.000Z", "cwd": "/home/dev/million"}) + "\n")
        parent = None
        for i in range(entries):
            eid = f"e{i:07x}"
            role = "user" if i % 2 == 0 else "assistant"
            text = f"step {i} touches module{i % 977} and file{i % 131}.rs"
            if i % 100_000 == 7:
                text += " limitneedle"
            msg = {"role": role, "content": [{"type": "text", "text": text}]}
            f.write(json.dumps({"type": "message", "id": eid, "parentId": parent,
                                "timestamp": f"2026-11-03T14:{(i // 60) % 60:02d}:{i % 60:02d}.000Z",
                                "message": msg}, separators=(",", ":")) + "\n")
            parent = eid
elif case == "many":
    # FILES Claude Code sessions of 4 entries, 100 per directory, directories nested 3 deep.
    for i in range(files):
        d = os.path.join(root, f"a{i // 10000}", f"b{i // 1000 % 10}", f"-home-dev-p{i // 100 % 10}")
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        sid = f"{i:08x}-0000-4000-8000-000000000000"
        words = f"tiny session {i} word{i % 5000}" + (" limitneedle" if i % 1000 == 0 else "")
        with open(os.path.join(d, sid + ".jsonl"), "w") as f:
            f.write(claude(sid, 2, f"/home/dev/p{i % 10}", words))
else:
    # A few ordinary sessions (symlink, unreadable, readonly add their twist in the shell).
    for i in range(4):
        d = os.path.join(root, f"-home-dev-p{i}")
        os.makedirs(d, exist_ok=True)
        sid = f"5a5a5a5{i}-0000-4000-8000-000000000000"
        with open(os.path.join(d, sid + ".jsonl"), "w") as f:
            f.write(claude(sid, 3, f"/home/dev/p{i}", f"small session {i} limitneedle"))
PY
}

# Runs one CLI command under GNU time; appends a row to the table and keeps its JSON.
ROWS=()
run() {
    local case=$1 step=$2; shift 2
    local dir=$OUT/$case json=$OUT/$case/$step.json tm=$OUT/$case/$step.time
    local rc=0
    timeout "${LIMITS_TIMEOUT:-1800}" "$TIME" -v -o "$tm" "${AS[@]}" "$BIN" "$@" --json >"$json" 2>"$dir/$step.stderr" || rc=$?
    local rss wall
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$tm")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tm")
    local cov
    cov=$(jq -c 'if .coverage then (.coverage | {complete, indexedSessions, eligibleSessions,
        staleSessions, incompleteSessions, reasons: [.reasons[] | if type == "object" then "\(.code) x\(.count)" else . end]})
        + (if .hits then {hits: (.hits | length), total} elif .sessions then {listed: (.sessions | length)} else {} end)
        + (if .indexed != null then {indexed, failed} else {} end)
        else . end' "$json" 2>/dev/null | head -c 600 || true)
    [ -n "$cov" ] || cov="(no JSON) $(head -c 300 "$dir/$step.stderr")"
    printf '%-10s %-9s rc=%s %8s %8s MiB  %s\n' "$case" "$step" "$rc" "$wall" "$rss" "$cov" >&2
    ROWS+=("| $case | $step | $rc | $wall | $rss | \`$cov\` |")
}

index_recall_sessions() {
    local case=$1 src=$2 idx=$3; shift 3
    run "$case" index index --source "$src" --index-dir "$idx" "$@"
    run "$case" recall recall limitneedle --scope global --page-size 100 --source "$src" --index-dir "$idx" "$@"
    run "$case" sessions sessions --source "$src" --index-dir "$idx" "$@"
}

for case in "${CASES[@]}"; do
    dir=$OUT/$case src=$OUT/$case/src idx=$OUT/$case/index
    chmod -R u+rwX "$dir" 2>/dev/null || true
    rm -rf "$dir"
    mkdir -p "$dir"
    t0=$(date +%s)
    gen "$case" "$src" "$BIG_MB" "$ENTRIES" "$FILES"
    AS=()
    case $case in
    bigline | million)
        index_recall_sessions "$case" "$src" "$idx"
        # The same with a per-sync byte budget below the file: skipped, counted, no read.
        run "$case" index-budget index --source "$src" --index-dir "$dir/index-budget" --max-sync-source-bytes 1000000
        ;;
    many)
        index_recall_sessions "$case" "$src" "$idx"
        run "$case" index-2 index --source "$src" --index-dir "$idx"
        # Everything in one sync.
        run "$case" index-all index --source "$src" --index-dir "$dir/index-all" --max-sync-sessions 1000000
        run "$case" recall-all recall limitneedle --scope global --page-size 100 --source "$src" --index-dir "$dir/index-all" --max-sync-sessions 1000000
        ;;
    symlink)
        p=$src/-home-dev-p0
        ln -s .. "$p/up"                 # a directory loop: p0/up/-home-dev-p0/up/...
        ln -s "$src" "$p/root"           # another, by absolute path
        ln -s self.jsonl "$p/self.jsonl" # a link to itself
        ln -s missing.jsonl "$p/dangling.jsonl"
        ln -s a.jsonl "$p/b.jsonl"; ln -s b.jsonl "$p/a.jsonl"  # a two-link cycle
        index_recall_sessions "$case" "$src" "$idx"
        ;;
    unreadable)
        mkdir -p "$src/-home-dev-locked"
        cp "$src/-home-dev-p0/"*.jsonl "$src/-home-dev-locked/5a5a5a5f-0000-4000-8000-000000000000.jsonl"
        sed 's/5a5a5a51/5a5a5a5e/g' "$src/-home-dev-p1/"*.jsonl >"$src/-home-dev-p1/5a5a5a5e-0000-4000-8000-000000000000.jsonl"
        chmod 000 "$src/-home-dev-p1/5a5a5a5e-0000-4000-8000-000000000000.jsonl" "$src/-home-dev-locked"
        AS=("${AS_NOBODY[@]}")
        mkdir -p "$idx"; [ ${#AS[@]} -eq 0 ] || chown 65534:65534 "$idx"
        index_recall_sessions "$case" "$src" "$idx"
        ;;
    readonly)
        find "$src" -type f -exec sha256sum {} + | sort >"$dir/before.sha"
        find "$src" -printf '%p %m %s %T@\n' | sort >"$dir/before.stat"
        chmod -R a-w "$src"
        AS=("${AS_NOBODY[@]}")
        mkdir -p "$idx"; [ ${#AS[@]} -eq 0 ] || chown 65534:65534 "$idx"
        index_recall_sessions "$case" "$src" "$idx"
        run "$case" index-all index --source "$src" --index-dir "$idx" --branches all
        find "$src" -type f -exec sha256sum {} + | sort >"$dir/after.sha"
        find "$src" -printf '%p %m %s %T@\n' | sort >"$dir/after.stat"
        if cmp -s "$dir/before.sha" "$dir/after.sha" && diff <(sed 's/ [0-7]* / /' "$dir/before.stat") <(sed 's/ [0-7]* / /' "$dir/after.stat") >/dev/null; then
            ROWS+=("| $case | sources | | | | byte-identical, sizes and mtimes unchanged |")
            echo "readonly: sources byte-identical" >&2
        else
            ROWS+=("| $case | sources | | | | CHANGED |")
            echo "readonly: SOURCES CHANGED" >&2
        fi
        chmod -R u+w "$src"
        ;;
    *) echo "unknown case $case" >&2; exit 2 ;;
    esac
    echo "$case: $(($(date +%s) - t0)) s with generation; $(du -sh "$src" | cut -f1) of sources" >&2
done

echo
echo "| case | step | exit | wall | peak RSS (MiB) | coverage |"
echo "| ---- | ---- | ---- | ---- | -------------- | -------- |"
printf '%s\n' "${ROWS[@]}"
