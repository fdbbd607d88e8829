#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Rust demangling speed (issue 18): names per second for each scheme, c++filt against faultline
# on the same list. The lists: v0, every _R name of the toolchain's librustc_driver (some
# 100,000) when the toolchain has it, else tests/demangle/rust/crasher.rs's built with v0,
# repeated; legacy, the legacy names of crasher.rs built with legacy mangling (RUSTC_BOOTSTRAP=1),
# repeated to 100,000. c++filt and `faultline demangle` are timed from outside on the whole list
# (start-up included, median of RUNS); bench_demangle times fl_demangle_rust in-process (best of
# 5 passes). Nothing is asserted: the exit status is non-zero only if something could not run.
# Usage: bench/demangle.py [BUILD_DIR] [RUNS]   (default build 5; needs BUILD/tools/faultline and
#        BUILD/bench/bench_demangle)
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
FAULTLINE = os.path.join(BUILD, "tools", "faultline")
INPROC = os.path.join(BUILD, "bench", "bench_demangle")
LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E(\.[A-Za-z0-9_.$@]*)?$")
TARGET = 100000


def symbols(path):
    out = subprocess.run(["nm", "-a", path], capture_output=True, text=True).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if len(line.split()) >= 2})


def build(tmp, scheme):
    out = os.path.join(tmp, f"crasher-{scheme}")
    env = dict(os.environ)
    flags = ["-C", f"symbol-mangling-version={scheme}"]
    if scheme == "legacy":
        env["RUSTC_BOOTSTRAP"] = "1"
        flags = ["-Z", "unstable-options"] + flags
    subprocess.run(["rustc", *flags, "-C", "opt-level=0", "-o", out,
                    os.path.join(ROOT, "tests", "demangle", "rust", "crasher.rs")], env=env, check=True)
    return out


def timed(cmd, path):
    ts = []
    for _ in range(RUNS):
        with open(path, "rb") as f:
            t0 = time.monotonic()
            subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, check=True)
            ts.append(time.monotonic() - t0)
    return statistics.median(ts)


with tempfile.TemporaryDirectory(prefix="fl-bench-demangle-") as tmp:
    lists = {}
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    drivers = [os.path.join(sysroot, "lib", f) for f in sorted(os.listdir(os.path.join(sysroot, "lib")))
               if f.startswith("librustc_driver-") and f.endswith(".so")]
    v0 = [n for n in symbols(drivers[0]) if n.startswith("_R")] if drivers else []
    v0_src = os.path.basename(drivers[0]) if drivers else "crasher.rs (v0)"
    if not v0:
        v0 = [n for n in symbols(build(tmp, "v0")) if n.startswith("_R")]
    legacy = [n for n in symbols(build(tmp, "legacy")) if LEGACY.match(n)]
    for name, names, src in (("v0", v0, v0_src), ("legacy", legacy, "crasher.rs (legacy)")):
        reps = max(1, -(-TARGET // len(names)))
        path = os.path.join(tmp, f"{name}.txt")
        with open(path, "w") as f:
            f.write("\n".join(names * reps) + "\n")
        lists[name] = (path, len(names) * reps, f"{len(names)} distinct names of {src}" +
                       (f", {reps} times" if reps > 1 else ""))
    print(f"runs: median of {RUNS} (from outside), best of 5 passes (in-process); "
          f"{subprocess.run(['c++filt', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
    print()
    print("| scheme | list | form | tool | names/s | x c++filt |")
    print("|--------|------|------|------|--------:|----------:|")
    for name, (path, n, desc) in lists.items():
        for form, copt, fopt in (("full", [], []), ("simplified", ["-i"], ["--simplified"])):
            ref = timed(["c++filt", *copt], path)
            rows = [(f"c++filt {' '.join(copt)}".strip(), n / ref)]
            t = timed([FAULTLINE, "demangle", *fopt], path)
            rows.append((f"faultline demangle {' '.join(fopt)}".strip(), n / t))
            out = subprocess.run([INPROC, path, *fopt], capture_output=True, text=True, check=True).stdout
            rate = float(re.search(r"([0-9.]+) names/s", out).group(1))
            rows.append(("fl_demangle_rust in-process", rate))
            for tool, r in rows:
                print(f"| {name} | {n} ({desc}) | {form} | {tool} | {r:,.0f} | {r * ref / n:.2f} |")
