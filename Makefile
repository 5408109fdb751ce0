# Two entry points, both bootstrap .venv on first use:
#   make demo   run the shipped example SME program and check it against numpy
#   make test   run the test suite
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

.PHONY: demo test
demo: $(STAMP)
	$(VENV)/bin/zatile demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2 -q $(PYTEST_ARGS)
