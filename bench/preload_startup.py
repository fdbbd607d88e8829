#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Process start-up with and without libfaultline-preload.so (issue 14's goal: at most 0.3 ms
# added): /bin/true and `python3 -c pass`, each run alternately with and without LD_PRELOAD, in
# one run; medians of the wall time from posix_spawn to its exit. Nothing is asserted.
# Usage: bench/preload_startup.py [BUILD_DIR] [RUNS]   (default build, 400 runs of each)
import os
import statistics
import sys
import tempfile
import time


def once(argv, env):
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env)
    os.waitpid(pid, 0)
    return time.perf_counter() - t0


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    lib = os.path.abspath(os.path.join(build, "preload/libfaultline-preload.so"))
    python = "/usr/bin/python3"
    with tempfile.TemporaryDirectory(prefix="fl-startup-") as d:
        base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        with_lib = dict(base, LD_PRELOAD=lib, FAULTLINE_REPORT_DIR=d)
        print(f"load average before: {os.getloadavg()[0]:.2f}; {runs} runs of each, alternating")
        print()
        print("| program | without (ms, median) | with (ms, median) | added (ms) | goal |")
        print("|---|---:|---:|---:|---|")
        for argv, n in ((["/bin/true"], runs), ([python, "-S", "-c", "pass"], runs // 4)):
            for _ in range(5):  # warm the page cache
                once(argv, base)
                once(argv, with_lib)
            a, b = [], []
            for _ in range(n):
                a.append(once(argv, base))
                b.append(once(argv, with_lib))
            ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
            print(f"| `{' '.join(argv)}` | {ma:.3f} | {mb:.3f} | {mb - ma:.3f} | "
                  f"{'met' if mb - ma <= 0.3 else 'not met'} (<= 0.3) |")


if __name__ == "__main__":
    main()
