# faultline: `make demo` shows a crash and its report, `make test` runs every test.
# Other targets: deps (install Debian packages), build, install PREFIX=dir, clean,
# arm64 (cross-build for Linux arm64 and install it at $(BUILD_ARM64)/prefix; tests run under qemu).
BUILD  ?= build
BUILD_ARM64 ?= build-arm64
PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += --no-print-directory

.PHONY: all deps build arm64 test demo install clean
all: build

deps:
	@scripts/setup-deps.sh
	@scripts/setup-zig.sh >/dev/null

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_WERROR=ON
	cmake --build $(BUILD) -j$(JOBS)

# The arm64 build's tests decode their reports with this build's CLI.
arm64: build
	@scripts/setup-arm64-deps.sh
	cmake -S . -B $(BUILD_ARM64) -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_WERROR=ON -DFL_BUILD_BENCH=OFF \
	  -DFL_HOST_CLI=$(abspath $(BUILD))/tools/faultline
	cmake --build $(BUILD_ARM64) -j$(JOBS)
	cmake --install $(BUILD_ARM64) --prefix $(abspath $(BUILD_ARM64))/prefix >/dev/null

# Both architectures; the last line counts the tests of both.
test: build arm64
	scripts/run-tests.sh $(BUILD) $(BUILD_ARM64)

# The build's output goes to a log here, so that the demo's own output stands out.
demo: deps
	@mkdir -p $(BUILD) && echo "Building faultline in $(BUILD)/ (log: $(BUILD)/build.log)"
	@$(MAKE) build >$(BUILD)/build.log 2>&1 || { tail -n 40 $(BUILD)/build.log; exit 1; }
	@scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD_ARM64)
