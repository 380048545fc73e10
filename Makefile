# Everything CI runs is `make test`.
CARGO ?= cargo
SHELL := /bin/bash

.PHONY: test test-rust lint fmt demo-run walk-example

test: lint test-rust fuzz-check

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

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
	hot_open cold_open catalog_open recall_request expand_request regex
FUZZ_SECONDS ?= 60

# Type-checks every target so it keeps compiling. The pinned toolchain is enough: nightly is
# only needed to run them, and `cargo fuzz build` (sanitizers, all targets) takes minutes.
fuzz-check:
	$(CARGO) check --manifest-path fuzz/Cargo.toml --bins --examples

# Every target for FUZZ_SECONDS each, one at a time, from fresh seeds.
fuzz-smoke:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	fuzz/seed.sh
	set -e; for t in $(FUZZ_TARGETS); do \
		$(CARGO) +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS); \
	done
