# Everything CI runs is `make test`.
CARGO ?= cargo
SHELL := /bin/bash

.PHONY: test test-rust lint fmt demo-run walk-example

test: lint test-rust

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
