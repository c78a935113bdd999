# Two commands: `make demo` and `make test`. Everything they need is installed from this
# repository's own files into .venv (Python) and .tools (Node packages).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test venv lock bench clean

demo: venv
	$(BIN)/python -m devtools.demo

test: venv
	$(BIN)/python -m pytest

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

# Re-resolve the top-level pins and freeze the result (run after editing requirements.txt).
lock:
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e ' > constraints.txt

bench: venv
	$(BIN)/python bench/kafka_bounded_read.py

clean:
	rm -rf .demo output
