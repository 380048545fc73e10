# Everything CI runs is `make test`.
CARGO ?= cargo
SHELL := /bin/bash

.PHONY: test test-rust lint fmt demo-run walk-example

test: lint test-rust fuzz-check test-python bench-check relevance-check test-mcp test-wasm

# The engine crates the browser build compiles, for its target too: some of their code
# (cfg'd for wasm32) only compiles there. (test-wasm lints sessiondex-wasm itself; clippy
# lints only the packages named.) Then the API docs, with every intra-doc link resolved.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	rustup target add $(WASM_TARGET)
	$(CARGO) clippy -p sessiondex-source -p sessiondex-core -p sessiondex-query \
		--target $(WASM_TARGET) -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

test-rust:
	$(CARGO) test --workspace

fmt:
	$(CARGO) fmt --all

# The main job over the bundled example corpus.
walk-example:
	$(CARGO) run --release -q -- walk --source examples/sessions --json

# Fuzz targets (fuzz/, its own workspace and target dir; see docs/reliability.md).
.PHONY: fuzz-check fuzz-smoke
FUZZ_TARGETS := source_pi source_omp source_claude source_codex source_detect \
	hot_open cold_open catalog_open recall_request expand_request regex recall_run
FUZZ_SECONDS ?= 60

# Type-checks every target so it keeps compiling. The pinned toolchain is enough: nightly is
# only needed to run them, and `cargo fuzz build` (sanitizers, all targets) takes minutes.
# Then runs recall_run's checks over 2000 seeded inputs (fuzz/examples/recall_random.rs), and
# over 150 with the real logs of ../shared/fixtures/sessions indexed too (skipped when absent).
fuzz-check:
	$(CARGO) check --manifest-path fuzz/Cargo.toml --bins --examples
	$(CARGO) run -q --manifest-path fuzz/Cargo.toml --example recall_random -- 2000 1
	$(CARGO) run -q --manifest-path fuzz/Cargo.toml --example recall_random -- 150 1 ../shared/fixtures/sessions

# Every target for FUZZ_SECONDS each, one at a time, from fresh seeds.
fuzz-smoke:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	fuzz/seed.sh
	set -e; for t in $(FUZZ_TARGETS); do \
		$(CARGO) +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS); \
	done

# Benchmarks (benches/, docs/performance.md). bench-check runs every criterion bench once in
# test mode so they keep compiling (part of `make test`; no peers). bench writes a 200 MB
# corpus and runs compare with the peers: tantivy and SQLite FTS5 (compiled in, minutes) and
# ripgrep (`apt-get install -y ripgrep`).
.PHONY: bench bench-check
BENCH_SIZE ?= 200MB
# Builds per system in `compare`; the median is reported (one build on a shared host can be
# 10-15% off another of the same code).
BENCH_ROUNDS ?= 5
BENCH_CORPUS := target/bench-corpus
BENCH := $(CARGO) run --release -q -p sessiondex-bench --features peers --

bench-check:
	$(CARGO) bench -p sessiondex-bench -- --test

# The relevance benchmark (benches/relevance/, docs/performance.md "Relevance"). relevance-check
# runs its quick questions over the bundled examples/sessions and testdata in a debug build (no
# peers, no tantivy) and fails when a guaranteed question misses or hit@5 drops below the floor;
# relevance runs the full labeled set (generated corpus and ../shared fixtures) in release.
.PHONY: relevance relevance-check
relevance-check:
	$(CARGO) run -q -p sessiondex-bench -- relevance --quick

relevance:
	$(CARGO) run --release -q -p sessiondex-bench -- relevance

bench:
	rm -rf $(BENCH_CORPUS)
	$(BENCH) gen --out $(BENCH_CORPUS) --size $(BENCH_SIZE) --seed 42
	$(BENCH) compare --corpus $(BENCH_CORPUS) --build-rounds $(BENCH_ROUNDS)

# Python bindings (bindings/python): maturin and the test tools from PyPI in a venv under target/,
# the wheel built and installed there, then its pytest suite (tests/). pytest's exit code 5 (no
# test ran) fails too. The wheel is a dev build: measured on the 2 shared cores, a clean dev build
# takes 2:00 and the suite 0:30, a --release build 3:15 and the suite 0:08 (plus 0:45 of pip
# either way); `make test-python PY_PROFILE=--release` builds and tests the optimized one.
.PHONY: test-python
PYTHON ?= python3
PY_PROFILE ?=
PY_VENV := target/python/.venv
PY_WHEELS := target/python/wheels
PY_PACKAGES := maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 pyarrow==26.0.1 tqdm==4.70.1 \
	'tomli==2.5.0; python_version < "3.11"'
PIP := $(PY_VENV)/bin/python -m pip --disable-pip-version-check -q

test-python:
	test -x $(PY_VENV)/bin/python || $(PYTHON) -m venv $(PY_VENV)
	$(PIP) install $(PY_PACKAGES)
	rm -rf $(PY_WHEELS)
	$(PY_VENV)/bin/maturin build $(PY_PROFILE) -m bindings/python/Cargo.toml \
		-i $(PY_VENV)/bin/python --out $(PY_WHEELS)
	$(PIP) install --force-reinstall --no-deps $(PY_WHEELS)/sessiondex-*.whl
	cd bindings/python && ../../$(PY_VENV)/bin/python -m pytest; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "test-python: pytest ran no tests" >&2; exit 1; fi; exit $$rc

# MCP server (docs/mcp.md): `sessiondex mcp` driven by a real client, the `mcp` Python SDK from
# PyPI, installed in test-python's venv (created here when missing); the raw JSON-RPC cases are
# Rust tests (crates/sessiondex-cli/tests/mcp.rs) run by test-rust.
.PHONY: test-mcp
MCP_PACKAGES := mcp==2.3.0 pytest==9.2.0

test-mcp:
	test -x $(PY_VENV)/bin/python || $(PYTHON) -m venv $(PY_VENV)
	$(PIP) install $(MCP_PACKAGES)
	$(CARGO) build -p sessiondex-cli
	cd crates/sessiondex-cli/tests/mcp && SESSIONDEX_BIN=$(CURDIR)/target/debug/sessiondex \
		$(CURDIR)/$(PY_VENV)/bin/python -m pytest -p no:cacheprovider; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "test-mcp: pytest ran no tests" >&2; exit 1; fi; exit $$rc

# The browser package (bindings/wasm; docs/wasm.md). `make wasm` builds it into the demo site
# bindings/wasm/demo/pkg/: wasm-bindgen-cli at exactly the version pinned in Cargo.toml, the
# wasm32 target, a size-profile build, wasm-bindgen, then binaryen's wasm-opt (Debian's package;
# -Oz takes the .wasm from 1.57 MB to 1.45 MB), and fails above WASM_MAX_BYTES.
# `make test-wasm` adds node tests of the built package and the demo page in headless Chromium
# (Debian's chromium, playwright-core from npm), compared with the CLI's JSON.
# Before those, the wasm-bindgen-test unit tests (bindings/wasm/tests/api.rs) under node, with
# wasm-bindgen-test-runner from wasm-bindgen-cli, in profile wasm-test (dev without debug info).
.PHONY: wasm test-wasm
WASM_BINDGEN_VERSION := $(shell sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' Cargo.toml)
WASM_TARGET := wasm32-unknown-unknown
WASM_PKG := bindings/wasm/demo/pkg
WASM_MAX_BYTES := 1500000
# The features rustc enables for wasm32 (its target_features section); wasm-opt 108 needs them named.
WASM_OPT_FEATURES := --enable-bulk-memory --enable-mutable-globals --enable-sign-ext \
	--enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y

wasm:
	test -n "$(WASM_BINDGEN_VERSION)"
	rustup target add $(WASM_TARGET)
	[ "$$(wasm-bindgen --version 2>/dev/null)" = "wasm-bindgen $(WASM_BINDGEN_VERSION)" ] || \
		$(CARGO) install wasm-bindgen-cli --version =$(WASM_BINDGEN_VERSION) --locked
	command -v wasm-opt >/dev/null || $(APT_INSTALL) binaryen || (apt-get update && $(APT_INSTALL) binaryen)
	$(CARGO) build -p sessiondex-wasm --target $(WASM_TARGET) --profile wasm-release
	rm -rf $(WASM_PKG)
	wasm-bindgen --target web --out-dir $(WASM_PKG) --out-name sessiondex \
		target/$(WASM_TARGET)/wasm-release/sessiondex_wasm.wasm
	wasm-opt -Oz $(WASM_OPT_FEATURES) $(WASM_PKG)/sessiondex_bg.wasm -o $(WASM_PKG)/sessiondex_bg.wasm
	@size=$$(stat -c %s $(WASM_PKG)/sessiondex_bg.wasm); gz=$$(gzip -9c $(WASM_PKG)/sessiondex_bg.wasm | wc -c); \
		echo "wasm: $(WASM_PKG)/sessiondex_bg.wasm $$size bytes ($$gz gzipped)"; \
		test $$size -le $(WASM_MAX_BYTES) || { echo "wasm: larger than $(WASM_MAX_BYTES) bytes" >&2; exit 1; }

test-wasm: wasm
	$(CARGO) clippy -p sessiondex-wasm --target $(WASM_TARGET) --all-targets -- -D warnings
	command -v node >/dev/null && command -v npm >/dev/null || $(APT_INSTALL) nodejs npm || \
		(apt-get update && $(APT_INSTALL) nodejs npm)
	CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
		$(CARGO) test -p sessiondex-wasm --target $(WASM_TARGET) --profile wasm-test
	$(CARGO) build -p sessiondex-cli
	test -x /usr/bin/chromium || $(APT_INSTALL) chromium || (apt-get update && $(APT_INSTALL) chromium)
	cd bindings/wasm/tests && npm ci --no-audit --no-fund --loglevel=error
	cd bindings/wasm/tests && node --test api.test.mjs
	cd bindings/wasm/tests && node browser.mjs
