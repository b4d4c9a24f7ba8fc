# gpuplan: the README's commands. `make setup` once, then `make report` on a GPU host (into runs/, ignored by git),
# `make test` (or `make test-fast`), `make site`, `make lint` anywhere.
#
# Everything runs in a virtual environment inside the clone (.venv), which `make setup` makes where it is
# missing. It sees the system's site-packages, so that a GPU host's own CUDA build of torch is used, not
# replaced. CI makes a clean one first (.ci/run), so that nothing installed by hand on a machine can stand in
# for a dependency pyproject.toml does not declare. PYTHON=python3 uses a Python of your choice instead.
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP ?= $(PYTHON) -m pip
GPUPLAN ?= $(PYTHON) -m planner.cli
RESULTS ?= results
# Where `make report` collects: a working folder git ignores, so that a collection never rewrites the committed
# results/ (copy a machine folder there, or collect with --out results, to add a run on purpose).
RUNS ?= runs
REPORTS ?= reports
SITE_OUT ?= site/_build
# The site `make report` builds: the committed machines and this one, side by side (copied together, ignored by git).
SITE_ROOT ?= site/_root
# Installed only where `import torch` fails: a GPU host keeps its own CUDA build of torch.
# Plain PyPI is the only index our machines reach; where a local wheel mirror is configured
# (as on the build machines) this resolves to the CPU build. Elsewhere on Linux, PyPI's wheel is
# the CUDA one, which also runs on a CPU.
TORCH_VERSION ?= 2.13.0
# What WeasyPrint needs from the system (Pango, HarfBuzz, a font), poppler's pdftoppm for the PDF tests,
# and Debian's chromium for the browser tests (tests/test_browser.py drives it headless, from disk).
APT_PACKAGES ?= libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz0b libharfbuzz-subset0 fonts-dejavu-core poppler-utils \
	chromium slurm-wlm
# The results folder name: MACHINE=... if given (made filesystem-safe), else this host's id
# (hostname + GPU model + count), as `gpuplan collect` names it.
MACHINE ?=
MACHINE_ID = $(PYTHON) -c "import sys; from collectors.core.machine import default_machine_id; from gpuplan_schema.machine import sanitize_machine_id; \
	print(sanitize_machine_id(sys.argv[1]) if sys.argv[1] else default_machine_id())" "$(MACHINE)"

.PHONY: setup system-packages venv report site test test-fast lint

setup: system-packages venv
	@$(PYTHON) -c "import torch" 2>/dev/null \
		&& echo "torch present: $$($(PYTHON) -c 'import torch; print(torch.__version__)')" \
		|| $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -e ".[test,parquet]"

venv:
	@$(PYTHON) -c "" 2>/dev/null || python3 -m venv --system-site-packages $(VENV) \
		|| { echo "python3 -m venv failed: install python3-venv (apt-get install python3-venv)"; exit 2; }

system-packages:
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(APT_PACKAGES); \
	else \
		echo "not root or no apt-get: skipping the system packages. gpuplan plan, report and site need only Pango, HarfBuzz"; \
		echo "and a font for the PDF (often present already); the tests also need poppler, chromium and Slurm. To install as root:"; \
		echo "  apt-get install $(APT_PACKAGES)"; \
	fi

# Collect this machine into runs/<machine>/, render its report, build the site of results/ and this machine.
# Writes only ignored paths: runs/, reports/, site/_root/, site/_build/.
report:
	@set -e; machine="$$($(MACHINE_ID))"; \
	$(GPUPLAN) collect --out "$(RUNS)" --machine "$$machine"; \
	$(GPUPLAN) report "$(RUNS)/$$machine" --out "$(REPORTS)"; \
	rm -rf "$(SITE_ROOT)"; mkdir -p "$(SITE_ROOT)"; cp -R "$(RESULTS)/." "$(SITE_ROOT)/"; \
	rm -rf "$(SITE_ROOT)/$$machine"; cp -R "$(RUNS)/$$machine" "$(SITE_ROOT)/$$machine"; \
	$(GPUPLAN) site "$(SITE_ROOT)" --out "$(SITE_OUT)"

site:
	$(GPUPLAN) site "$(RESULTS)" --out "$(SITE_OUT)"

test:
	$(PYTHON) -m pytest -q

# Everything but the tests marked slow (browser, PDF, real collections): a quick check while editing.
test-fast:
	$(PYTHON) -m pytest -q -m "not slow"

lint:
	$(PYTHON) -m ruff check .
