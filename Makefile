# The README's two commands: `make demo` and `make test`. Both install what
# they need first (scripts/bootstrap).
SWIFT ?= swift
DEMO_TRACE ?= captures/synthetic-session.jsonl

.PHONY: all deps build demo test bench bench-live clean

all: build

deps:
	@scripts/bootstrap

build: deps
	$(SWIFT) build

demo: build
	$$($(SWIFT) build --show-bin-path)/kinetrace inspect $(DEMO_TRACE)

# scripts/check-layers fails on an import or dependency that breaks the layering.
test: deps
	SWIFT=$(SWIFT) scripts/check-layers
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark --format markdown

# Host latency and capture drops on loopback (needs root for capture).
bench-live: deps
	Benchmarks/live/run.sh 30 30

clean:
	rm -rf .build Benchmarks/.build
