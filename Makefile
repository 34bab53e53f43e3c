# The README's two commands: `make demo` and `make test`. Both install what
# they need first (scripts/bootstrap).
SWIFT ?= swift
DEMO_TRACE ?= captures/synthetic-session.jsonl

.PHONY: all deps build demo test example-test docs install-check install fuzz-short fuzz bench bench-live clean

all: build

deps:
	@scripts/bootstrap

build: deps
	$(SWIFT) build

demo: build
	$$($(SWIFT) build --show-bin-path)/kinetrace inspect $(DEMO_TRACE)

# scripts/check-layers fails on an import or dependency that breaks the layering.
# scripts/check-readme holds README's figures to the code and the tree; scripts/readme-walkthroughs
# runs its three walkthroughs as written (about 45 s).
test: deps
	SWIFT=$(SWIFT) scripts/check-layers
	scripts/check-vocabulary
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	scripts/check-protocol-identity
	KINETRACE=$$($(SWIFT) build --show-bin-path)/kinetrace python3 scripts/check-declaration-schema.py
	KINETRACE=$$($(SWIFT) build --show-bin-path)/kinetrace scripts/check-readme
	KINETRACE=$$($(SWIFT) build --show-bin-path)/kinetrace scripts/readme-walkthroughs
	$(MAKE) example-test
	$(MAKE) docs
	$(MAKE) install-check
	$(MAKE) fuzz-short

# The conformance suite inside a host's own package (examples/swift-host-tests), as a
# game's CI would run it: its own build of Kinetrace by path, about a minute.
example-test:
	cd examples/swift-host-tests && $(SWIFT) test

# The DocC catalogues of the libraries a user imports, built as `swift package
# generate-documentation` does; any warning (a broken symbol link) fails. About 20 s.
DOC_TARGETS = KinetraceConformance KinetraceHost KinetraceWire
docs:
	$(SWIFT) package --disable-sandbox generate-documentation $(addprefix --target ,$(DOC_TARGETS)) --warnings-as-errors

# Installs like a CLI tool: the binary, a man page per command (kinetrace-manual over the
# binary's own help) and bash, zsh and fish completions, under $(DESTDIR)$(PREFIX).
PREFIX ?= /usr/local
CONFIGURATION ?= release
install: deps
	$(SWIFT) build -c $(CONFIGURATION) --product kinetrace
	$(SWIFT) build -c $(CONFIGURATION) --product kinetrace-manual
	scripts/install "$(DESTDIR)$(PREFIX)" "$$($(SWIFT) build -c $(CONFIGURATION) --show-bin-path)"

# `make install` into a temporary prefix, then `man kinetrace` and bash completion from it
# (scripts/check-install). The debug build `make test` already made, so CI builds no release.
install-check:
	@prefix=$$(mktemp -d) && trap 'rm -rf "$$prefix"' EXIT && \
	  $(MAKE) --no-print-directory install PREFIX="$$prefix" CONFIGURATION=debug && scripts/check-install "$$prefix"

# Every fuzz target (Fuzz/README.md) for FUZZ_SECONDS each after a ~70 s build:
# two targets at a time (15 targets: about 60 s plus the build), a smoke run; `make fuzz` runs longer. Fails on a crash, a failed build, or a target that ran nothing.
FUZZ_SECONDS ?= 8
fuzz-short:
	scripts/fuzz run -t $(FUZZ_SECONDS) -j 2

# A longer local run; FUZZ_ARGS as for scripts/fuzz run (e.g. "-t 600 --merge trace").
FUZZ_ARGS ?= -t 300
fuzz:
	scripts/fuzz run $(FUZZ_ARGS)

bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark --format markdown

# Host latency and capture drops on loopback (needs root for capture).
bench-live: deps
	Benchmarks/live/run.sh 30 30

clean:
	rm -rf .build .build-fuzz Benchmarks/.build
