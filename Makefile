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

.PHONY: all deps configure build test test-cpp test-python test-node test-sanitize test-image check-format format serve clean bench-transfer fuzz-build fuzz fuzz-regress

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

# The cpu image built with podman from build/bin (no compile in a container)
# on a Debian 12 base made by debootstrap, then run and probed
# (tests/python/test_deploy_image.py). Minutes, and it needs Debian's mirror:
# not part of make test or CI. The CUDA image is checked statically in make test.
test-image: build
	@scripts/install_deps.sh --image
	GPUFLOW_TEST_IMAGE=1 GPUFLOW_SERVER_BIN=$(BUILD_DIR)/bin/gpuflowd PYTHONPATH=clients/python \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/python/test_deploy_image.py

serve: build
	$(BUILD_DIR)/bin/gpuflowd --address=localhost --port=$(PORT) --backend=auto

# Every C++ file of ours must be clang-formatted (generated code is not ours).
SOURCES = $(shell git ls-files '*.h' '*.cc' '*.cu' '*.cuh' 2>/dev/null)
check-format: deps
	@clang-format --dry-run --Werror $(SOURCES) && echo "check-format: $(words $(SOURCES)) files formatted"
	@$(PYTHON) scripts/check_status_access.py
	@$(PYTHON) scripts/check_layout.py

# No absl::StatusOr value is read without a status check (.value(),
# ValueOrDie, `*x` before `x.ok()`): scripts/check_status_access.py.
check-status-access:
	@$(PYTHON) scripts/check_status_access.py

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

# libFuzzer targets (tests/fuzz/README.md), built with clang in build-fuzz.
# `make fuzz` runs each for FUZZ_SECONDS on a copy of its seed corpus (the
# committed one never grows) and fails when any finds a crash, leaving it in
# build-fuzz/crashes/<target>/. `make fuzz-regress` runs each once over its
# seeds and tests/fuzz/regressions/<target>/, without fuzzing.
FUZZ_SECONDS ?= 60
FUZZERS       = graph_fuzzer graph_json_fuzzer upload_stream_fuzzer execute_fuzzer
# Each target's seed directories under tests/fuzz/corpus/ and its dictionary
# (execute_fuzzer reads graph_fuzzer's input, so it starts from its seeds too).
FUZZ_INPUTS   = case $$f in \
	  execute_fuzzer) seeds="graph_fuzzer execute_fuzzer"; dict=graph_fuzzer ;; \
	  *) seeds=$$f; dict=$$f ;; \
	esac

fuzz-build: deps
	@if [ ! -f build-fuzz/build.ninja ]; then \
	  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DGPUFLOW_FUZZ=ON -DGPUFLOW_CUDA=OFF \
	    -DGPUFLOW_BUILD_TESTS=OFF -DGPUFLOW_BUILD_BENCH=OFF $(CMAKE_ARGS); \
	fi
	cmake --build build-fuzz -j $(JOBS) --target gpuflow_fuzzers

fuzz: fuzz-build
	@failed=""; for f in $(FUZZERS); do \
	  $(FUZZ_INPUTS); \
	  rm -rf build-fuzz/corpus/$$f; mkdir -p build-fuzz/corpus/$$f build-fuzz/crashes/$$f; \
	  for s in $$seeds; do cp tests/fuzz/corpus/$$s/* build-fuzz/corpus/$$f/; done; \
	  echo "fuzz: $$f for $(FUZZ_SECONDS) s"; \
	  build-fuzz/bin/$$f -max_total_time=$(FUZZ_SECONDS) -timeout=30 -print_final_stats=1 \
	    -dict=tests/fuzz/dict/$$dict.dict -artifact_prefix=build-fuzz/crashes/$$f/ \
	    build-fuzz/corpus/$$f > build-fuzz/$$f.log 2>&1 || failed="$$failed $$f"; \
	  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units)" build-fuzz/$$f.log || true; \
	done; \
	if [ -n "$$failed" ]; then \
	  for f in $$failed; do echo "fuzz: $$f FAILED (build-fuzz/$$f.log):"; tail -n 60 build-fuzz/$$f.log; done; \
	  exit 1; \
	fi; echo "fuzz: no crash in $(FUZZERS)"

fuzz-regress: fuzz-build
	@for f in $(FUZZERS); do \
	  $(FUZZ_INPUTS); \
	  inputs=$$(for s in $$seeds; do find tests/fuzz/corpus/$$s -type f; done; \
	    find tests/fuzz/regressions/$$f -type f ! -name '*.md' 2>/dev/null | sort); \
	  echo "fuzz-regress: $$f on $$(echo "$$inputs" | wc -l) inputs"; \
	  build-fuzz/bin/$$f $$inputs > build-fuzz/$$f.regress.log 2>&1 || \
	    { tail -n 60 build-fuzz/$$f.regress.log; echo "fuzz-regress: $$f FAILED"; exit 1; }; \
	done; echo "fuzz-regress: every input passes"
