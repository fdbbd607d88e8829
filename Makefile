# faultline: `make demo` shows a crash and its report, `make test` runs every test.
# Other targets: deps (install Debian packages), build, install PREFIX=dir, clean,
# darwin (cross-build for macOS arm64 and x86_64 with zig, then check the outputs; nothing runs them),
# arm64 (cross-build for Linux arm64 and install it at $(BUILD_ARM64)/prefix; tests run under qemu),
# sanitize (clang build with ASan and UBSan, and the fuzz targets, at $(BUILD_SAN)),
# fuzz (every fuzz target for FUZZ_SECONDS each: `make fuzz FUZZ_SECONDS=60`).
BUILD  ?= build
BUILD_ARM64 ?= build-arm64
BUILD_SAN ?= build-san
PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 1
MAKEFLAGS += --no-print-directory

.PHONY: all deps build darwin arm64 sanitize sanitize-configure fuzz test demo install clean
all: build

deps:
	@scripts/setup-deps.sh
	@scripts/setup-zig.sh >/dev/null

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_WERROR=ON
	cmake --build $(BUILD) -j$(JOBS)

# Release build for macOS 11+ of the library (static and dylib), the demo and the CLI, warnings
# as errors, in build-darwin-arm64/ and build-darwin-x86_64/ (cmake/toolchain-zig-macos.cmake).
darwin: deps
	@scripts/setup-darwin-deps.sh >/dev/null
	@set -e; for t in arm64:aarch64-macos x86_64:x86_64-macos; do \
	  dir=build-darwin-$${t%%:*}; mkdir -p $$dir; \
	  cmake -S . -B $$dir -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-zig-macos.cmake \
	    -DFL_ZIG_TARGET=$${t#*:} -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_WERROR=ON \
	    -DFL_BUILD_TESTS=OFF -DFL_BUILD_BENCH=OFF >$$dir/build.log 2>&1 || { cat $$dir/build.log; exit 1; }; \
	  cmake --build $$dir -j$(JOBS) >>$$dir/build.log 2>&1 || { tail -n 60 $$dir/build.log; exit 1; }; \
	done
	@scripts/check-darwin.sh build-darwin-arm64 build-darwin-x86_64

# The arm64 build is the library, its demo, its tests and the CLI (for `faultline unwind` of arm64
# states under qemu: a walker walks its own architecture; without libdw, so names but no lines).
# The tests decode their reports with this build's CLI.
arm64: build
	@scripts/setup-arm64-deps.sh
	cmake -S . -B $(BUILD_ARM64) -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_WERROR=ON -DFL_BUILD_BENCH=OFF \
	  -DFL_BUILD_UPLOAD=OFF \
	  -DFL_HOST_CLI=$(abspath $(BUILD))/tools/faultline
	cmake --build $(BUILD_ARM64) -j$(JOBS)
	cmake --install $(BUILD_ARM64) --prefix $(abspath $(BUILD_ARM64))/prefix >/dev/null

# The sanitizer build: clang-14, everything compiled with ASan and UBSan (undefined behaviour
# fatal), and the libFuzzer targets. Its tests are the unit and CLI tests (the crash tests are
# disabled there, see tests/CMakeLists.txt) and a 20 s smoke run of each fuzz target (label fuzz).
sanitize-configure: deps
	cmake -S . -B $(BUILD_SAN) -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFL_WERROR=ON -DFL_SANITIZE=ON -DFL_BUILD_FUZZERS=ON -DFL_BUILD_BENCH=OFF
sanitize: sanitize-configure
	cmake --build $(BUILD_SAN) -j$(JOBS)

# Each fuzz target for FUZZ_SECONDS (default 600), FUZZ_JOBS at a time, on its corpus in
# $(BUILD_SAN)/fuzz/<target>/ (seeded from tests/<module>/corpus/<target>/, which stays as it
# is); fails if any target finds a crash (its input is left next to the corpus).
fuzz: sanitize-configure
	cmake --build $(BUILD_SAN) --target fuzzers -j$(JOBS)
	scripts/fuzz.sh --seconds $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS) $(BUILD_SAN)

# Both Linux architectures and the sanitizer build run their tests (the last line counts all
# three); the Darwin builds are checked by the check_darwin test.
test: build darwin arm64 sanitize
	scripts/run-tests.sh $(BUILD) $(BUILD_ARM64) $(BUILD_SAN)

# The build's output goes to a log here, so that the demo's own output stands out.
demo: deps
	@mkdir -p $(BUILD) && echo "Building faultline in $(BUILD)/ (log: $(BUILD)/build.log)"
	@$(MAKE) build >$(BUILD)/build.log 2>&1 || { tail -n 40 $(BUILD)/build.log; exit 1; }
	@scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD_ARM64) $(BUILD_SAN) build-darwin-arm64 build-darwin-x86_64
