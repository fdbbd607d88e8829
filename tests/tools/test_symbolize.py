#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# ELF symbolication: `faultline symbolicate FILE ADDR...` and reports, on a C++ fixture built here
# (fixtures/lines.cpp, g++ -g -O2) and on libc6-dbg's libc debug file. Names against nm (and
# c++filt through nm -C), file:line against llvm-symbolizer-14 --no-inlines; the lookup order
# (.build-id, .gnu_debuglink with its CRC, recorded path), the on-disk index cache (reuse,
# damaged entries rebuilt, an unusable cache directory) and `symbolicate REPORT`.
import json
import os
import random
import re
import shutil
import subprocess

import tooltest

args = tooltest.setup("--mkreport", "--cxx", "--source")

check, run = tooltest.check, tooltest.run


W = args.workdir
CACHE = os.path.join(W, "cache")
# No system debug directory: only what the test puts in place may be found.
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=CACHE, FAULTLINE_DEBUG_DIR="")


def fl(*a, stdin=None, env=ENV):
    return subprocess.run([args.faultline, *a], capture_output=True, text=True, input=stdin, env=env)


# ---- Fixtures ----
app = os.path.join(W, "app")
run([args.cxx, "-g", "-O2", "-o", app, args.source])
debug = os.path.join(W, "app.debug")
run(["objcopy", "--only-keep-debug", app, debug])
stripped_dir = os.path.join(W, "installed")
os.makedirs(os.path.join(stripped_dir, ".debug"))
stripped = os.path.join(stripped_dir, "app")
run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + debug, app, stripped])
build_id = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", app]).stdout).group(1)


def functions(path):
    """[(start, size, {names})] of sized functions, from nm (names demangled by nm -C)."""
    by_addr = {}
    for line in run(["nm", "-C", "-S", "--defined-only", path]).stdout.splitlines():
        m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tTwWiI] (.+)$", line)
        if m and int(m.group(2), 16) > 1:
            a, s = int(m.group(1), 16), int(m.group(2), 16)
            name = re.sub(r"@.*$", "", m.group(3))  # symbol versions are not shown
            e = by_addr.setdefault(a, [s, set()])
            e[0] = max(e[0], s)
            e[1].add(name)
    return sorted((a, s, n) for a, (s, n) in by_addr.items())


def random_addrs(funcs, n, seed):
    rnd = random.Random(seed)
    picks = rnd.sample(funcs, min(n, len(funcs)))
    return [(a + rnd.randrange(s), a, names) for a, s, names in picks]


def oracle_lines(path, addrs):
    q = "".join(f"{a:#x}\n" for a in addrs)
    out = run(["llvm-symbolizer-14", "--obj=" + path, "--no-inlines"], input=q).stdout
    res = []
    for block in out.strip().split("\n\n"):
        m = re.match(r"(.*):(\d+):\d+$", block.splitlines()[-1])
        res.append((os.path.basename(m.group(1)), int(m.group(2))) if m and m.group(1) != "??" else None)
    return res


def ours(path, addrs, *opts):
    r = fl("symbolicate", "--lines", *opts, path, stdin="".join(f"{a:#x}\n" for a in addrs))
    check(r.returncode == 0, f"symbolicate {path}: exit {r.returncode} {r.stderr}")
    res = []
    for line in r.stdout.splitlines():
        m = re.match(r"(.*) \+ (\d+) \((.*):(\d+)\)$", line) or re.match(r"(\?\?)() \((.*):(\d+)\)$", line)
        res.append(m.groups() if m else (line, None, None, None))
    return r, res


def compare(path, n, seed, what):
    funcs = functions(path)
    check(len(funcs) > 5, f"{what}: nm found {len(funcs)} functions")
    qs = random_addrs(funcs, n, seed)
    addrs = [q[0] for q in qs]
    r, got = ours(path, addrs)
    want_lines = oracle_lines(path, addrs)
    check(len(got) == len(addrs), f"{what}: {len(got)} answers for {len(addrs)} addresses")
    bad_names = bad_lines = 0
    for (addr, start, names), g, wl in zip(qs, got, want_lines):
        name, off = g[0], g[1]
        if name not in names or off is None or int(off) != addr - start:
            bad_names += 1
            if bad_names <= 3:
                print(f"  {what} {addr:#x}: name {g[0]!r} + {g[1]} vs nm {sorted(names)} + {addr - start}")
        gl = (os.path.basename(g[2]), int(g[3])) if g[2] and g[2] != "??" else None
        if gl != wl:
            bad_lines += 1
            if bad_lines <= 3:
                print(f"  {what} {addr:#x}: line {gl} vs llvm-symbolizer {wl}")
    check(bad_names == 0, f"{what}: {bad_names} of {len(addrs)} names differ from nm")
    check(bad_lines == 0, f"{what}: {bad_lines} of {len(addrs)} file:line differ from llvm-symbolizer")
    return r


# ---- symbolicate FILE ADDR...: the fixture and libc6-dbg's libc ----
compare(app, 200, 1, "fixture")
r = fl("symbolicate", app, *[hex(a) for a, s, n in functions(app) if "fixture::Widget::draw(int)" in n])
check(r.stdout.strip() == "fixture::Widget::draw(int) + 0", f"C++ demangled: {r.stdout!r}")
clones = [(a, n) for a, s, n in functions(app) if any("[clone" in x for x in n)]
check(len(clones) >= 1, "the fixture has GCC clones (.isra/.cold)")

libc = "/lib/x86_64-linux-gnu/libc.so.6"
libc_id = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", libc]).stdout).group(1)
libc_dbg = f"/usr/lib/debug/.build-id/{libc_id[:2]}/{libc_id[2:]}.debug"
if check(os.path.exists(libc_dbg), f"libc6-dbg's debug file {libc_dbg} (scripts/setup-deps.sh)"):
    compare(libc_dbg, 1500, 2, "libc6-dbg")

# ---- The cache ----
entries = lambda: sorted(os.path.join(dp, f) for dp, _, fs in os.walk(CACHE) for f in fs if f.endswith(".fsi"))
shutil.rmtree(CACHE, ignore_errors=True)
qs = [q[0] for q in random_addrs(functions(app), 50, 3)]
_, cold = ours(app, qs)
ents = entries()
check(len(ents) == 1 and os.path.basename(ents[0]).startswith(build_id + "-q3-"),
      f"one cache entry named by build-id and quality: {ents}")
stat0 = os.stat(ents[0]) if ents else None
_, warm = ours(app, qs)
check(warm == cold, "answers from the cache equal the fresh ones")
check(ents and os.stat(ents[0]).st_ino == stat0.st_ino, "the cache entry was reused, not rewritten")
# A damaged entry (a flipped byte, then a cut one) is ignored and rebuilt.
for damage in ("flip", "cut"):
    data = bytearray(open(ents[0], "rb").read())
    if damage == "flip":
        data[len(data) // 2] ^= 0x55
    else:
        data = data[: len(data) // 3]
    open(ents[0], "wb").write(data)
    _, again = ours(app, qs)
    check(again == cold, f"{damage}ped cache entry: same answers")
    check(open(ents[0], "rb").read() != bytes(data), f"{damage}ped cache entry rewritten")
# The stripped file has the same build-id and a different symbol table: its own entry.
_, st_ans = ours(stripped, qs)
check(len(entries()) == 2, f"stripped copy gets its own entry: {entries()}")
check(all(a[0] == "??" for a in st_ans), f"stripped copy: no names ({st_ans[:3]})")
# Its index has no lines and no file names (issue 15, point 6: building one copied from the
# builder's NULL tables, undefined even for 0 bytes; the UBSan build aborted): the same answers
# again, from the cache.
_, st_warm = ours(stripped, qs)
check(st_warm == st_ans, "stripped copy, from the cache: the same answers")
# An unusable cache directory (a file in its place) or none at all still answers.
bad_cache = os.path.join(W, "not-a-dir")
open(bad_cache, "w").write("x")
for opts in (["--cache-dir", bad_cache], ["--no-cache"]):
    _, a = ours(app, qs, *opts)
    check(a == cold, f"symbolicate {' '.join(opts)}: same answers")
r = fl("symbolicate", "--lines", app, *[hex(q) for q in qs[:3]], env=dict(ENV, FAULTLINE_CACHE_DIR="off"))
check(r.returncode == 0 and len(r.stdout.splitlines()) == 3, "FAULTLINE_CACHE_DIR=off")

# ---- Reports: where the symbol file is found ----
SLIDE = 0x5c0000000000
funcs = {min(n): (a, s) for a, s, n in functions(app)}
draw = funcs["fixture::Widget::draw(int)"][0]
exported = funcs["c_exported"][0]
main_ = funcs["main"][0]
# Frame 0 exact; callers are return addresses (looked up at pc - 1).
frames = [draw + 4, exported + 9, main_ + 20]
want_syms = ["fixture::Widget::draw(int)", "c_exported", "main"]
want_lines = oracle_lines(app, [draw + 4, exported + 8, main_ + 19])


def report(path, id_hex=build_id):
    d = os.path.join(W, "reports")
    os.makedirs(d, exist_ok=True)
    spec = f"{path},gnu,{id_hex},{SLIDE:x},{SLIDE:x},{SLIDE + 0x100000:x}"
    return run([args.mkreport, d, "--image", spec, *sum((["--frame", f"{SLIDE + pc:x}"] for pc in frames), [])]).stdout.strip()


def show(rep, *opts):
    r = fl("show", "--json", *opts, rep)
    if not check(r.returncode == 0, f"show {opts}: {r.stderr}"):
        return None
    fr = json.loads(r.stdout)["threads"][0]["frames"][: len(frames)]
    return [(f["symbol"], (os.path.basename(f["file"]), f["line"]) if f["file"] else None) for f in fr]


want = list(zip(want_syms, want_lines))
check(all(want_lines), f"llvm-symbolizer knows the fixture's lines: {want_lines}")
got = show(report(app))
check(got == want, f"recorded path: {got} vs {want}")
# The stripped copy alone has no names; its .gnu_debuglink finds the debug file in .debug/.
rep = report(stripped)
check(show(rep) == [(None, None)] * 3, f"stripped, no debug file yet: {show(rep)}")
shutil.copy(debug, os.path.join(stripped_dir, ".debug", "app.debug"))
check(show(rep) == want, f".gnu_debuglink in .debug/: {show(rep)}")
# A debug file whose CRC is not the link's (one byte appended: same build-id) is refused.
with open(os.path.join(stripped_dir, ".debug", "app.debug"), "ab") as f:
    f.write(b"\0")
check(show(rep) == [(None, None)] * 3, f".gnu_debuglink with a wrong CRC: {show(rep)}")
os.remove(os.path.join(stripped_dir, ".debug", "app.debug"))
# Next to the file (gdb's first place for a debug link).
shutil.copy(debug, os.path.join(stripped_dir, "app.debug"))
check(show(rep) == want, f".gnu_debuglink next to the file: {show(rep)}")
os.remove(os.path.join(stripped_dir, "app.debug"))
# --symbols DIR/.build-id/xx/rest.debug; and a system debug directory laid out the same way.
symdir = os.path.join(W, "symbols")
os.makedirs(os.path.join(symdir, ".build-id", build_id[:2]))
shutil.copy(debug, os.path.join(symdir, ".build-id", build_id[:2], build_id[2:] + ".debug"))
check(show(rep, "--symbols", symdir) == want, f"--symbols .build-id: {show(rep, '--symbols', symdir)}")
r = fl("show", "--json", rep, env=dict(ENV, FAULTLINE_DEBUG_DIR=symdir))
check(r.returncode == 0 and json.loads(r.stdout)["threads"][0]["frames"][0]["symbol"] == want_syms[0],
      "the system debug directory's .build-id tree")
# A file with another build-id is never used.
other = ("0" if build_id[0] != "0" else "1") + build_id[1:]
check(show(report(app, other), "--symbols", symdir) == [(None, None)] * 3, "build-id mismatch: no names")

# ---- symbolicate REPORT: the report with symbols, JSON unless --format says otherwise ----
rep = report(app)
a, b = fl("symbolicate", rep), fl("show", "--format", "json", rep)
check(a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("{"), "symbolicate REPORT = show --format json")
a, b = fl("symbolicate", "--format", "apple", rep), fl("show", "--format", "apple", rep)
check(a.returncode == 0 and a.stdout == b.stdout, "symbolicate REPORT --format apple")
t = fl("show", rep)
check("fixture::Widget::draw(int) + 4 (lines.cpp:" in t.stdout, f"show text has file:line: {t.stdout[-900:]}")

tooltest.finish()
