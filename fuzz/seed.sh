#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds: session logs from testdata/, examples/sessions and
# ../shared/fixtures/sessions (when present), valid index files from the seed generator
# (fuzz/examples/seed_index.rs) and the committed compat files, and a few request JSONs and
# regex patterns. The corpus is not committed (fuzz/.gitignore); run this before fuzzing.
#
#   fuzz/seed.sh            # from the repository root or from fuzz/
set -euo pipefail

fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$fuzz_dir")"
shared="$root/../shared/fixtures/sessions"
corpus="$fuzz_dir/corpus"
# Larger logs are cut to their first bytes: libFuzzer's max_len follows the largest seed, and
# small inputs mutate faster.
max_seed=16384

mkdir -p "$corpus"

# seed_sessions TARGET DIR... : every *.jsonl under each existing DIR, named after its path.
seed_sessions() {
    local target="$1"
    shift
    mkdir -p "$corpus/$target"
    local dir f name
    for dir in "$@"; do
        [ -d "$dir" ] || continue
        while IFS= read -r -d '' f; do
            name="$(realpath --relative-to="$root/.." "$f" | tr '/' '_')"
            head -c "$max_seed" "$f" >"$corpus/$target/$name"
        done < <(find "$dir" -name '*.jsonl' -type f -print0)
    done
}

seed_sessions source_pi "$root/examples/sessions/pi" "$root/testdata/sessions" "$shared/pi"
seed_sessions source_omp "$root/examples/sessions/omp" "$root/examples/sessions/pi" "$shared/pi"
seed_sessions source_claude "$root/examples/sessions/claude-code" "$root/testdata/sessions" "$shared/claude-code"
seed_sessions source_codex "$root/examples/sessions/codex" "$shared/codex"
seed_sessions source_detect "$root/examples/sessions" "$root/testdata/sessions" "$shared"

# Valid index files built from the bundled sessions, plus the committed format-v1 files.
cargo run -q --manifest-path "$fuzz_dir/Cargo.toml" --example seed_index -- "$corpus"
compat="$root/crates/sessiondex-core/tests/data/v1"
if [ -d "$compat" ]; then
    cp "$compat/session.hot" "$corpus/hot_open/compat-v1.hot"
    cp "$compat/session.cold" "$corpus/cold_open/compat-v1.cold"
    cp "$compat/catalog" "$corpus/catalog_open/compat-v1.catalog"
fi

# seed_lines TARGET : one seed file per line of stdin.
seed_lines() {
    local target="$1" n=0 line
    mkdir -p "$corpus/$target"
    while IFS= read -r line; do
        n=$((n + 1))
        printf '%s' "$line" >"$corpus/$target/seed-$n"
    done
}

seed_lines recall_request <<'EOF'
{"query":"flaky timeout"}
{"query":"fix test","queryMode":"phrase","queryMatch":"all","scope":"project","cwd":"/home/dev/webapp"}
{"query":"time?out","queryMode":"regex","scope":"global","branches":"all","pageSize":100,"offset":20}
{"query":"tiemout","queryMode":"fuzzy","since":"2026-01-01","until":"2026-12-31T23:59:59Z"}
{"scope":"session:019a4c1e","entryRange":[0,9],"role":"tool","tool":"bash","ref":"omp.grep"}
{"provider":"mcp","action":"read","outcome":"error","sourceHash":"ab","lineageFingerprint":"cd"}
{"scope":"session","entryRange":[5,2],"pageSize":0}
{"queryMode":"nope","scope":"galaxy","unknown":1}
EOF

seed_lines expand_request <<'EOF'
{"session":"019a4c1e","indices":[0,3,7]}
{"session":"/home/dev/s.jsonl","entryIds":["a1b2"],"before":2,"after":3,"maxChars":500}
{"session":"s1","addresses":["a1b2/0"],"branches":"all","textOffset":1000}
{"session":"s1","operationAddresses":["a1b2/1"],"sourceHash":"ab","lineageFingerprint":"cd"}
{"session":"s1","range":[2,9]}
{"session":" ","range":[9,2],"indices":[-1],"maxChars":0}
EOF

seed_lines regex <<'EOF'
time(out|d)
^fix\b.*test$
(?i)src/[a-z_]+\.rs
\w+@\w+\.com
[\p{Greek}]+|\d{3,}
a{1000}
(a|b)*c
EOF

for d in "$corpus"/*/; do
    printf '%s: %s seeds\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"
done
