# KV_MATH: book and tests. `make book` and `make test` set themselves up from scratch.
#
#   make venv    .venv from requirements-book.lock + kvmath (editable); redone when the lock changes
#   make venv-test  .venv from requirements-test.lock (the book's set + torch, transformers, pytest, ...)
#   make assets  vendored JS for offline pages -> book/assets/ (tools/book_assets.py)
#   make chapters  write the model chapters from the template (_toc.yml -> notebooks/generated/)
#   make book    execute every chapter and build the HTML -> _build/html/ (installs the book's lock only)
#   make test    python -m pytest (builds the book once, checks pages in headless Chromium)
#   make bench   time a full book build and each chapter; one fit prediction, the solver, a 10^6 sweep,
#                the largest config and a 400,000-entry safetensors header (cold kvmath-fit answers);
#                the calculator in the page (time until ready, bytes added to the site)
#   make lab     JupyterLab from the project's environment; chapters' .md files open as notebooks
#                (chapters written, not executed; --allow-root added as root;
#                LAB_ARGS="--port=8899 --no-browser" to pass flags, LAB_ROOT=dir for another root)
#   make lock    regenerate requirements-book.lock and requirements-test.lock from their .in files
#                in a throw-away venv, every file pinned by its sha256 (installed with --require-hashes)
#   make clean   remove build outputs; `make distclean` also removes .venv and the npm cache

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(abspath $(VENV))/bin
BOOK_STAMP := $(VENV)/.kvmath-book
TEST_STAMP := $(VENV)/.kvmath-test
LOCK_VENV  := .cache/lock-venv
PIP     = $(1)/bin/python -m pip --disable-pip-version-check
CHROMIUM ?= /usr/bin/chromium

# Use the venv's own tools and the venv's `python3` kernelspec (ipykernel ships it in
# $(VENV)/share/jupyter/kernels); JUPYTER_PATH comes first in Jupyter's search order,
# so a user-level `python3` kernelspec elsewhere cannot hijack the build.
VENV_ENV := PATH="$(BIN):$$PATH" JUPYTER_PATH="$(abspath $(VENV))/share/jupyter" \
            PYDEVD_DISABLE_FILE_VALIDATION=1

.PHONY: fuzz all venv venv-test sglang-wheels assets chapters book test bench lock browser clean distclean lab

all: book

venv: $(BOOK_STAMP)

venv-test: $(TEST_STAMP)

# $(call install,LOCK): a Python 3.11 .venv (created if missing or another version), LOCK installed into it,
# then kvmath itself, editable, built by the locked setuptools (nothing outside the lock is fetched).
define install
	@if ! $(VENV)/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then \
		echo "== creating $(VENV) with $(PYTHON)"; \
		rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); \
	fi
	@echo "== $(1): installing its pinned packages, each file checked against its sha256 (--require-hashes);"
	@echo "   fetched from the package index unless pip has it cached (the lines below name each download)"
	@$(call PIP,$(VENV)) install --require-hashes --progress-bar off -r $(1) > $(VENV)/.pip-install.log 2>&1 \
		|| { cat $(VENV)/.pip-install.log; exit 1; }
	@grep -E '^ *(Downloading|Successfully installed)' $(VENV)/.pip-install.log || echo "   (nothing new: all installed)"
	$(call PIP,$(VENV)) install -q --no-deps --no-build-isolation -e .
	@$(VENV_ENV) $(VENV)/bin/python -c "import sys; from jupyter_client.manager import KernelManager; \
		cmd = KernelManager(kernel_name='python3').format_kernel_cmd(); \
		assert cmd[0] == sys.executable, ('python3 kernel does not resolve to the venv', cmd); \
		print('== python3 kernel ->', cmd[0])"
endef

# The book's set only: no torch, no transformers, no test tools.
$(BOOK_STAMP): requirements-book.lock pyproject.toml
	$(call install,requirements-book.lock)
	@touch $@

# The test lock includes the book lock (-r), so it satisfies the book's stamp too.
$(TEST_STAMP): requirements-test.lock requirements-book.lock pyproject.toml
	$(call install,requirements-test.lock)
	@touch $(BOOK_STAMP) $@

assets: venv
	$(VENV_ENV) $(VENV)/bin/python tools/book_assets.py

# --all: Sphinx re-reads (so myst-nb re-executes) only changed pages otherwise, and a page
# whose text did not change would keep numbers computed by an older kvmath.
# The calculator in the page (kvmath.book.calculator) installs this wheel in Pyodide: kvmath itself, built
# from the checkout by the locked setuptools (setuptools leaves its build/ folder, removed again).
book: venv assets chapters
	rm -rf .cache/wheel && $(call PIP,$(VENV)) wheel -q --no-deps --no-build-isolation -w .cache/wheel . \
		&& rm -rf build && cp .cache/wheel/kvmath-*-py3-none-any.whl book/assets/pyodide/kvmath.whl
	$(VENV_ENV) KVMATH_BOOK_BUILD=1 $(VENV)/bin/jb build . --all -W -n --keep-going

# The model chapters (every notebooks/generated/<id> entry of _toc.yml) are written from one template,
# notebooks/model_chapter.md, and executed here in parallel (kvmath.book.execute, one kernel per CPU);
# _config.yml keeps myst-nb from running them again, so jb build only renders them.
chapters: venv
	$(VENV_ENV) KVMATH_BOOK_BUILD=1 $(VENV)/bin/python -m kvmath.book.model_chapter --book

# JupyterLab (pinned in requirements-book.lock, with jupytext and jupyterlab-myst) from the venv. The
# chapters are MyST Markdown notebooks: jupytext opens them as notebooks by default ("Jupytext
# Notebook" as the default viewer of markdown / myst files, written to the venv's labconfig, the
# lowest-priority settings layer, so a user's own choice still wins), and jupyterlab-myst renders
# the prose. The model is the first code cell's `model` (a known id or a config.json path).
# KVMATH_BOOK_BUILD is not set here: kvmath.book.setup_book() picks the live chart renderer. tests/test_lab.py drives it.
# The chapters are written, not executed (their cells run in the kernel when opened), so the server starts
# in seconds; as root, --allow-root is added (Jupyter refuses root without it).
LAB_ARGS ?=
LAB_ROOT ?= $(CURDIR)
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: venv
	$(VENV_ENV) $(VENV)/bin/python -m kvmath.book.model_chapter --book --no-execute
	@mkdir -p $(VENV)/etc/jupyter/labconfig
	@$(VENV)/bin/python -c "import json, sys; viewers = {'markdown': 'Jupytext Notebook', 'myst': 'Jupytext Notebook'}; \
		json.dump({'@jupyterlab/docmanager-extension:plugin': {'defaultViewers': viewers}}, \
		open(sys.argv[1], 'w'), indent=1)" $(VENV)/etc/jupyter/labconfig/default_setting_overrides.json
	$(VENV_ENV) $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(LAB_ROOT)" $(LAB_ROOT_FLAG) $(LAB_ARGS)

# Debian's chromium for the page tests (tests/test_pages.py); installed only if missing.
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
		else \
			echo "$(CHROMIUM) missing: run 'sudo apt-get install -y chromium'" >&2; exit 1; \
		fi; \
	fi

# SGLang's released wheels for tests/test_sglang_oracle.py (its pool classes run on the CPU); never committed.
# Each is pinned by its sha256 (tools/sglang_wheels.py: a cached wheel is checked, a missing one fetched with
# pip download --no-deps --require-hashes).
sglang-wheels: venv-test
	$(VENV)/bin/python tools/sglang_wheels.py

test: venv-test browser sglang-wheels
	$(VENV_ENV) $(VENV)/bin/python -m pytest

# The long fuzz run (50,000 cases: GGUF headers, configs through every engine, the vLLM plan and budget,
# command lines) with its counts; the suite runs a short version.
fuzz: venv-test
	$(VENV_ENV) $(VENV)/bin/python tools/fuzz.py

bench: venv-test browser assets chapters
	$(VENV_ENV) $(VENV)/bin/python tools/bench_book.py
	$(VENV_ENV) $(VENV)/bin/python tools/bench_fit.py
	$(VENV_ENV) $(VENV)/bin/python tools/bench_startup.py
	$(VENV_ENV) $(VENV)/bin/python tools/bench_page.py

# Two hashed locks (tools/lock.py, in a throw-away Python 3.11 venv): what pip resolves from requirements-book.in,
# then from requirements-book.in + requirements-test.in (the tests' additions), each file pinned by its sha256 so
# `make venv` / `make venv-test` install them with --require-hashes. torch resolves to the local CPU build in
# /opt/wheels (pip's find-links, `pip config list`); the lock pins torch==2.13.0 with that wheel's hash.
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python tools/lock.py
	rm -rf $(LOCK_VENV)

clean:
	rm -rf _build .pytest_cache .hypothesis
	find book/assets -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .cache
