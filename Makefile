# faultline: `make demo` shows a crash and its report, `make test` runs every test.
# Other targets: deps (install Debian packages), build, install PREFIX=dir, clean.
BUILD  ?= build
PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += --no-print-directory

.PHONY: all deps build test demo install clean
all: build

deps:
	@scripts/setup-deps.sh
	@scripts/setup-zig.sh >/dev/null

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_WERROR=ON
	cmake --build $(BUILD) -j$(JOBS)

test: build
	scripts/run-tests.sh $(BUILD)

# The build's output goes to a log here, so that the demo's own output stands out.
demo: deps
	@mkdir -p $(BUILD) && echo "Building faultline in $(BUILD)/ (log: $(BUILD)/build.log)"
	@$(MAKE) build >$(BUILD)/build.log 2>&1 || { tail -n 40 $(BUILD)/build.log; exit 1; }
	@scripts/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
