# The two commands of the README:
#   make serve   builds and starts gpuflowd on localhost:50051 (auto backend)
#   make test    builds and runs every test (C++ and Python)
# Both install missing Debian packages first (scripts/install_deps.sh).

BUILD_DIR    ?= build
BUILD_TYPE   ?= RelWithDebInfo
GPUFLOW_CUDA ?= AUTO
JOBS         ?= $(shell nproc)
PYTHON       ?= /usr/bin/python3
PORT         ?= 50051
CMAKE_ARGS   ?=

.PHONY: all deps configure build test test-cpp test-python test-node test-sanitize check-format format serve clean bench-transfer

all: build

deps:
	@scripts/install_deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DGPUFLOW_CUDA=$(GPUFLOW_CUDA) $(CMAKE_ARGS); \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build check-format test-cpp test-python test-node

test-cpp: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-python: build
	GPUFLOW_SERVER_BIN=$(BUILD_DIR)/bin/gpuflowd PYTHONPATH=clients/python \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/python

# The Node.js example (clients/node) against the real server, with node's
# test runner. Skipped, saying so, where node or npm is not installed; the
# npm packages are installed (npm ci) when missing or older than the lock.
test-node: build
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "test-node: SKIPPED: node and npm are not installed (apt-get install nodejs npm)"; \
	else \
	  if [ ! -f clients/node/node_modules/.package-lock.json ] || \
	     [ clients/node/package-lock.json -nt clients/node/node_modules/.package-lock.json ]; then \
	    (cd clients/node && npm ci --no-audit --no-fund) || exit 1; \
	  fi; \
	  GPUFLOW_SERVER_BIN=$(BUILD_DIR)/bin/gpuflowd node --test tests/node/example.test.js; \
	fi

serve: build
	$(BUILD_DIR)/bin/gpuflowd --address=localhost --port=$(PORT) --backend=auto

# Every C++ file of ours must be clang-formatted (generated code is not ours).
SOURCES = $(shell git ls-files '*.h' '*.cc' '*.cu' '*.cuh' 2>/dev/null)
check-format: deps
	@clang-format --dry-run --Werror $(SOURCES) && echo "check-format: $(words $(SOURCES)) files formatted"

format:
	clang-format -i $(SOURCES)

bench-transfer: build
	bench/transfer.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) build-sanitize clients/python/gpuflow/v1

# The C++ tests again under AddressSanitizer and UndefinedBehaviorSanitizer
# (a separate build in build-sanitize; the NVRTC compile tests are skipped
# there, they run in `make test`).
test-sanitize: deps
	@if [ ! -f build-sanitize/build.ninja ]; then \
	  cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUFLOW_SANITIZE=ON \
	    -DGPUFLOW_BUILD_BENCH=OFF -DGPUFLOW_CUDA=$(GPUFLOW_CUDA) $(CMAKE_ARGS); \
	fi
	cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E "CodegenTest|NvrtcTest"
