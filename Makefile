# Two commands a reader needs: `make all` (run every example) and `make test` (run the tests);
# `make lint` checks the style.
# Both create .venv first. The venv sees the packages of the Python that creates it, so an
# installed torch/triton is reused rather than downloaded again.
#
# Variables (override on the command line):
#   PYTHON  the interpreter that creates the venv            (default: python3)
#   VENV    where the venv lives                             (default: .venv)
#   TORCH   pip requirement for torch                        (CI: torch==2.13.0, a CPU build)
#   TRITON  pip requirement for triton                       (CI: triton==3.6.0 and triton==3.9.0)
#   NUMPY   pip requirement for numpy                        (triton 3.6's interpreter needs numpy<2.4)
#   PYTEST_ARGS  extra arguments for pytest                  (e.g. PYTEST_ARGS="-k weighted -x")
#   BENCH_ARGS   extra arguments for make bench              (e.g. BENCH_ARGS="--only 04")

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch
TRITON ?= triton
NUMPY ?= numpy
PYTEST_ARGS ?=
BENCH_ARGS ?=

PY := $(VENV)/bin/python
LESSONS := $(sort $(wildcard [0-9][0-9]_*/main.py))
# Each lesson, then the files it goes on in, if any (02's Parts 3 to 5, 03's appendix, 04's Part 4).
EXAMPLES := $(foreach l,$(LESSONS),$(l) $(wildcard $(addprefix $(dir $(l)),fused.py persistent.py stream_k.py any_x.py block_ptr.py wide.py)))

.PHONY: all test lint bench pictures exercises env clean help

all: env
	@set -e; for example in $(EXAMPLES); do echo "==> $(PY) $$example"; $(PY) $$example; done

test: env
	$(PY) -m pytest tests $(PYTEST_ARGS)

# Each lesson's practice checker: "passed" or "not yet" for every exercise (add --solutions by hand
# to check the worked answers).
exercises: env
	@set -e; for f in $(sort $(wildcard [0-9][0-9]_*/exercises.py)); do echo "==> $(PY) $$f"; $(PY) $$f; done

# ruff's lint and its formatter's check, with the settings in pyproject.toml (100 characters a line).
lint: env
	$(PY) -m pip install --disable-pip-version-check -q ruff
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# On the GPU: each lesson's sweep, 02's layouts table and a training step (tools/); writes
# results/*.csv and a plot per lesson (BENCH_ARGS="--only layouts train": just the two tables).
bench: env
	$(PY) -m tools.bench $(BENCH_ARGS)

# Each lesson's picture (main.py --draw, tools/pictures.py) into its folder; runs on the CPU too.
pictures: env
	@set -e; for example in $(LESSONS); do $(PY) $$example --draw $$(dirname $$example)/picture.png; done

# This file's opening comment, and what each target does.
help:
	@sed -n '1,/^$$/s/^# \{0,1\}//p' Makefile
	@echo "Targets:"
	@echo "  all        run every lesson and the files it goes on in (a GPU, or the CPU's interpreter)"
	@echo "  test       the tests (pytest tests/)"
	@echo "  lint       ruff's lint and format check"
	@echo "  exercises  each lesson's practice checker"
	@echo "  bench      the timing tables and plots into results/ (needs a CUDA GPU)"
	@echo "  pictures   each lesson's picture.png (the CPU will do)"
	@echo "  env        the venv with torch, triton and the rest (all, test, ... make it first)"
	@echo "  clean      remove the venv and caches"

# The venv gets a .pth file listing the creating Python's site-packages. `--system-site-packages`
# alone is not enough when PYTHON is itself a venv (as on many GPU images): it would only see the
# base interpreter's packages, not the ones holding torch.
env: $(PY)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt "$(TORCH)" "$(TRITON)" "$(NUMPY)"

$(PY):
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(PYTHON) -c "import site; print('\n'.join(site.getsitepackages()))" \
		> "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/creator_site_packages.pth"

clean:
	rm -rf .venv .venv-* .pytest_cache gpu-round-out
	find . -name __pycache__ -prune -exec rm -rf {} +
