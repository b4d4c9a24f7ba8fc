# gpuplan: the README's commands. `make setup` once, then `make report` on a GPU host,
# `make test`, `make site`, `make lint` anywhere.

PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
GPUPLAN ?= $(PYTHON) -m planner.cli
RESULTS ?= results
REPORTS ?= reports
SITE_OUT ?= site/_build
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
MACHINE_ID = $(PYTHON) -c "import sys; from collectors.machine import default_machine_id, sanitize_machine_id; \
	print(sanitize_machine_id(sys.argv[1]) if sys.argv[1] else default_machine_id())" "$(MACHINE)"

.PHONY: setup system-packages report site test lint

setup: system-packages
	@$(PYTHON) -c "import torch" 2>/dev/null \
		&& echo "torch present: $$($(PYTHON) -c 'import torch; print(torch.__version__)')" \
		|| $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -e ".[test]"

system-packages:
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(APT_PACKAGES); \
	else \
		echo "not root or no apt-get: install these system packages yourself: $(APT_PACKAGES)"; \
	fi

# Collect this machine into results/<machine>/, render its report, rebuild the site.
report:
	@set -e; machine="$$($(MACHINE_ID))"; \
	$(GPUPLAN) collect --out "$(RESULTS)" --machine "$$machine"; \
	$(GPUPLAN) report "$(RESULTS)/$$machine" --out "$(REPORTS)"; \
	$(GPUPLAN) site "$(RESULTS)" --out "$(SITE_OUT)"

site:
	$(GPUPLAN) site "$(RESULTS)" --out "$(SITE_OUT)"

test:
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check .
