#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Process start-up with and without libfaultline-preload.so (issue 14's goal: at most 0.3 ms
# added): /bin/true and `python3 -S -c pass`, run in turn without LD_PRELOAD, with an empty
# preloaded library (what any preload costs), with ours but not installing (an invalid
# FAULTLINE_SIGNALS: the loading alone) and with ours installing, in a shuffled order each round;
# medians of the wall time from posix_spawn to exit, and of the child's CPU time (user + system,
# from wait4), which waiting for a CPU on a loaded machine does not inflate. "Added" is the median
# of each round's own difference (installed minus without, the two started side by side), with a
# 95 % confidence interval from the order statistics: the machine's drift over a run (python3's
# medians moved by 0.3 ms between runs) cancels out of a paired difference, not out of the
# difference of two medians. Nothing is asserted.
# Usage: bench/preload_startup.py [BUILD_DIR] [RUNS]   (default build, 400 runs of each)
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def once(argv, env):
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env,  # (stderr: the "not installed" line)
                         file_actions=[(os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    _, _, ru = os.wait4(pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    lib = os.path.abspath(os.path.join(build, "preload/libfaultline-preload.so"))
    python = "/usr/bin/python3"
    with tempfile.TemporaryDirectory(prefix="fl-startup-") as d:
        empty = os.path.join(d, "libempty.so")
        with open(os.path.join(d, "empty.c"), "w") as f:
            f.write("void fl_empty(void) {}\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", empty, os.path.join(d, "empty.c")],
                       check=True)
        # PYTHONHASHSEED=0 in every variant: with the seed random, python3's own start-up work
        # (its dicts' collisions) differs from start to start by more than the effect measured.
        base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        base["PYTHONHASHSEED"] = "0"
        envs = [base, dict(base, LD_PRELOAD=empty),
                dict(base, LD_PRELOAD=lib, FAULTLINE_REPORT_DIR=d, FAULTLINE_SIGNALS="NONE"),
                dict(base, LD_PRELOAD=lib, FAULTLINE_REPORT_DIR=d)]
        print(f"load average before: {os.getloadavg()[0]:.2f}; {runs} runs of each "
              f"({runs // 4} for python3), in turn")
        print()
        rows = []
        for argv, n in ((["/bin/true"], runs), ([python, "-S", "-c", "pass"], runs // 4)):
            for _ in range(5):  # warm the page cache
                for e in envs:
                    once(argv, e)
            t = [[] for _ in envs]
            order = list(range(len(envs)))
            rng = random.Random(14)
            for _ in range(n):
                rng.shuffle(order)
                for k in order:
                    t[k].append(once(argv, envs[k]))
            rows.append((argv, t))
        for what, i in (("wall time", 0), ("CPU time (user + system)", 1)):
            print(f"| program: {what} | without (ms, median) | an empty preload | ours, loaded "
                  "only | ours, installed | added by ours (ms; paired, 95 % CI) | goal |")
            print("|---|---:|---:|---:|---:|---:|---|")
            for argv, t in rows:
                m = [statistics.median(x[i] for x in col) * 1e3 for col in t]
                d = sorted((b[i] - a[i]) * 1e3 for a, b in zip(t[0], t[3]))
                half = 0.98 * math.sqrt(len(d))  # (1.96 / 2 standard deviations of the rank)
                lo = d[max(0, int(len(d) / 2 - half))]
                hi = d[min(len(d) - 1, int(math.ceil(len(d) / 2 + half)))]
                added = statistics.median(d)
                print(f"| `{' '.join(argv)}` | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.3f} | "
                      f"{added:.3f} ({lo:.3f} to {hi:.3f}) | "
                      f"{'met' if added <= 0.3 else 'not met'} (<= 0.3) |")
            print()
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
