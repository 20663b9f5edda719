# Two commands do all the set-up: `make demo` and `make test` install what is
# missing (Debian packages, .venv, the cached netCDF4 wheel), then run.
VENV   := .venv
STAMP  := $(VENV)/.climio-installed
PY     := $(VENV)/bin/python
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1

.PHONY: install test demo bench clean check-pip

CAPI   := $(VENV)/lib/libclimio.so
CAPI_SOURCES := $(wildcard src/climio/capi/*.py src/climio/capi/*.c src/climio/capi/*.h src/climio/capi/*.F90 src/climio/capi/include/*.h \
                           src/climio/pio/*.py src/climio/pio/*.c src/climio/pio/*.h src/climio/pio/*.F90 src/climio/pio/*.in src/climio/pio/include/*.h)

KERNELS := $(VENV)/.climio-kernels
SOURCES := $(shell find src/climio -name '*.py')

install: $(STAMP) $(CAPI) $(KERNELS)

$(STAMP): pyproject.toml constraints.txt scripts/install.sh
	bash scripts/install.sh
	touch $@ $(KERNELS)

# The C API and Fortran module again when their sources change (scripts/install.sh builds them first).
$(CAPI): $(CAPI_SOURCES) | $(STAMP)
	$(PY) -m climio.capi.build $(VENV)
	touch $@

# numba's cache is kept per version of the sources: after an edit, compile eva's kernels again up front.
$(KERNELS): $(SOURCES) | $(STAMP)
	$(PY) -m climio.eva.warmup
	touch $@

# Two workers, a test file each at a time (its fixtures built once): most tests wait on mpiexec and disks.
test: $(STAMP) $(CAPI) $(KERNELS)
	$(PY) -m pytest -q -n 2 --dist loadfile tests

# climio from PyPI's packages alone (pip install . into a plain venv) against the full installation.
check-pip: $(STAMP) $(KERNELS)
	bash scripts/check_pip.sh

demo: $(STAMP) $(CAPI) $(KERNELS)
	bash scripts/demo.sh

bench: $(STAMP)
	$(VENV)/bin/climio bench io --ranks 1,2,4 --out bench-output

clean:
	rm -rf $(VENV) demo-output bench-output .pytest_cache

# docs/reference/ from the argument parser and the docstrings (tests/test_docs.py fails when it is stale).
.PHONY: docs
docs: $(STAMP)
	$(PY) scripts/reference.py
