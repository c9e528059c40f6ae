# capevolve: `make demo` runs the whole loop on the example project, `make test` the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CAPEVOLVE := $(VENV)/bin/capevolve
STAMP := $(VENV)/.installed
DEMO_PROJECT ?= benchmarks/retail
TOY_PROJECT := benchmarks/toy
DEMO_RUN := demo-run

.PHONY: install demo demo-toy test test-fast bench clean cluster-up cluster-down
CLUSTER_ROOT ?= /tmp/capevolve-cluster

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	bash $(DEMO_PROJECT)/demo.sh $(CAPEVOLVE) $(DEMO_RUN)

demo-toy: $(STAMP)
	rm -rf $(DEMO_RUN)
	$(CAPEVOLVE) run --project $(TOY_PROJECT) --run-dir $(DEMO_RUN)
	$(CAPEVOLVE) evaluate --run-dir $(DEMO_RUN) --candidate $(TOY_PROJECT)/improved_capability --split val
	$(CAPEVOLVE) gate --run-dir $(DEMO_RUN) --candidate cand_001
	$(CAPEVOLVE) accept --run-dir $(DEMO_RUN) --candidate cand_001 --note "adds the missing rules"
	$(CAPEVOLVE) status --run-dir $(DEMO_RUN)
	$(CAPEVOLVE) finalize --run-dir $(DEMO_RUN)
	$(CAPEVOLVE) report --run-dir $(DEMO_RUN)

test: $(STAMP)
	$(PY) -m pytest

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow and not cluster"

bench: $(STAMP)
	$(PY) benchmarks/perf/bench.py
	$(PY) benchmarks/perf/bench_diagnose.py
	$(PY) benchmarks/perf/reliability.py
	$(PY) benchmarks/perf/bench_cluster.py

cluster-up: $(STAMP)
	$(PY) cluster/local_cluster.py up --root $(CLUSTER_ROOT)

cluster-down:
	$(PY) cluster/local_cluster.py down --root $(CLUSTER_ROOT)

clean:
	rm -rf $(VENV) $(DEMO_RUN) .pytest_cache
