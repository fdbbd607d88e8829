#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline minidump` on reports of real crashes (the integration crasher: several threads,
# code without frame pointers, abort through libc, a stripped copy with a separate debug file),
# read by Breakpad's own tools (npm minidump: minidump_dump, dump_syms, minidump_stackwalk): with
# symbol files made by dump_syms from the binaries, minidump_stackwalk must walk the crashed
# thread to the same frames (addresses and modules) as faultline's report, from the stack
# memory the report kept (the default budget), and list the report's modules with the debug
# identifiers dump_syms computes from the files. The same for an arm64 crash (the arm64 build's
# crasher under qemu-aarch64, `make arm64`; its libc's symbols from the cross sysroot): the
# minidump's ARM64 context is read as Breakpad reads Crashpad's.
import os
import re
import shutil
import subprocess

import tooltest

args = tooltest.setup("--crasher", "--setup-interop", "--proto", "--arm64-crasher", "--arm64-sysroot")
check, run, crash = tooltest.check, tooltest.run, tooltest.crash
W = args.workdir
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(W, "cache"), FAULTLINE_DEBUG_DIR="")
BIN = os.path.join(run([args.setup_interop]).stdout.strip(), "minidump", "bin", "linux-x64")
SYMS = os.path.join(W, "syms")


_dumped = {}


def dump_syms(path, debug_dir=None):
    """Breakpad symbol file of path in SYMS/<name>/<id>/<name>.sym; returns dump_syms' id."""
    key = (path, debug_dir)
    if key not in _dumped:
        r = run([os.path.join(BIN, "dump_syms"), path, *([debug_dir] if debug_dir else [])], check_rc=False)
        m = re.match(r"MODULE \S+ \S+ ([0-9A-F]+) (\S+)\n", r.stdout)
        _dumped[key] = None
        if m:
            d = os.path.join(SYMS, m.group(2), m.group(1))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, m.group(2) + ".sym"), "w") as f:
                f.write(r.stdout)
            _dumped[key] = m.group(1)
    return _dumped[key]


def stackwalk(dump):
    """{'modules': {name: (debug id, base)}, 'crashed': [(module, rip)], 'threads': n}."""
    out = run([os.path.join(BIN, "minidump_stackwalk"), dump, SYMS], check_rc=False).stdout
    mods = {}
    for line in run([os.path.join(BIN, "minidump_stackwalk"), "-m", dump, SYMS], check_rc=False).stdout.splitlines():
        f = line.split("|")
        if f[0] == "Module":
            mods[f[1]] = (f[4], int(f[5], 16))
    crashed, threads = [], 0
    blocks = re.split(r"\n(?=Thread \d+)", out)
    for b in blocks:
        if not b.startswith("Thread "):
            continue
        threads += 1
        if "(crashed)" not in b.splitlines()[0]:
            continue
        lines = b.splitlines()[1:]
        heads = [i for i, l in enumerate(lines) if re.match(r"\s*\d+\s+\S", l)]
        for k, i in enumerate(heads):
            seg = "\n".join(lines[i:heads[k + 1] if k + 1 < len(heads) else len(lines)])
            mod = re.match(r"\s*\d+\s+([^!\s]+)", lines[i]).group(1)
            rip = re.search(r"\b(?:rip|pc) = (0x[0-9a-f]+)", seg)
            found = re.search(r"Found by: (.*)", seg)
            crashed.append((mod, int(rip.group(1), 16) if rip else None, found and found.group(1)))
        # Past the outermost frame (_start, where faultline stops: its return address would lie
        # in no image) Breakpad goes on, by stack scanning or by a CFI row dump_syms wrote for
        # _start, to an address in no module (shown as the bare address): not a frame.
        while crashed and (crashed[-1][2] == "stack scanning" or crashed[-1][0].startswith("0x")):
            crashed.pop()
        crashed = [(m, a) for m, a, _ in crashed]
    return {"modules": mods, "crashed": crashed, "threads": threads, "text": out}


def check_minidump(name, report, debug_dirs=None, sysroot=""):
    js = __import__("json").loads(run([args.faultline, "show", "--json", report], env=ENV).stdout)
    dump = report[:-4] + ".dmp"
    run([args.faultline, "minidump", "-o", dump, report])
    # (minidump_dump exits 1 when optional streams faultline does not write are missing)
    dd = run([os.path.join(BIN, "minidump_dump"), dump], check_rc=False).stdout
    check(all(s in dd for s in ("MDRawSystemInfo", "MDRawThread", "MDRawModule", "MDException")),
          f"{name}: minidump_dump reads its streams")
    sig = js["signal"]
    sw_text = run([os.path.join(BIN, "minidump_stackwalk"), dump], check_rc=False).stdout
    # (Breakpad names the si_code of faults only: SIGABRT's SI_TKILL is not shown)
    reason = sig["name"] + (f" /{sig['code_name']}" if sig["code"] > 0 else "")
    check(re.search(rf"Crash reason:  {reason}\n", sw_text) and
          (sig["address"] is None or f"Crash address: {sig['address']}" in sw_text),
          f"{name}: minidump_stackwalk's crash reason is the report's signal {sig}")
    ids = {}
    for img in js["images"]:
        p = img["path"] if os.path.isfile(img["path"]) else sysroot + img["path"]
        if os.path.isfile(p):
            ids[os.path.basename(p)] = dump_syms(p, (debug_dirs or {}).get(p))
    sw = stackwalk(dump)
    check(sw["threads"] == len(js["threads"]), f"{name}: {sw['threads']} threads, the report has {len(js['threads'])}")
    for img in js["images"]:
        base = os.path.basename(img["path"])
        got = sw["modules"].get(base)
        check(got is not None and got[1] == int(img["start"], 16),
              f"{name}: module {base} at {img['start']} ({got})")
        if ids.get(base):
            check(got and got[0] == ids[base], f"{name}: {base}: debug id {got and got[0]} vs dump_syms {ids[base]}")
    crashed = [t for t in js["threads"] if t["crashed"]][0]
    # The default budget: the crashed thread's stack from its sp, at most 8 KiB, and nothing
    # of the others (the report's memory items, as protoc decodes them).
    with open(report, "rb") as f:
        dec = subprocess.run(["protoc", "--decode=faultline.Report", "-I", os.path.dirname(args.proto),
                              args.proto], stdin=f, capture_output=True).stdout.decode("latin-1")
    mem = re.findall(r"memory \{\s*tid: (\d+)\s*start: (\d+)", dec)
    check(len(mem) == 1 and int(mem[0][0]) == crashed["tid"] and
          int(mem[0][1]) == int(crashed["frames"][0]["sp"], 16),
          f"{name}: one memory item, the crashed thread's from its sp: {mem}")
    ours = [(os.path.basename(js["images"][f["image"]]["path"]) if f["image"] is not None else "?",
             int(f["pc"], 16)) for f in crashed["frames"]]
    check(sw["crashed"] == ours, f"{name}: minidump_stackwalk walks the crashed thread to faultline's frames:\n"
          f"  breakpad {[(m, hex(a)) for m, a in sw['crashed']]}\n  faultline {[(m, hex(a)) for m, a in ours]}")
    return sw


d = os.path.join(W, "reports")
for sc in ("null_deref", "thread", "omit_fp", "abort"):
    rep = crash(args.crasher, sc, d)
    if rep:
        check_minidump(sc, rep)

# Stripped, its symbols in a separate debug file (dump_syms reads it through the debug link).
stripped_dir = os.path.join(W, "stripped")
stripped, debug = tooltest.stripped_copy(args.crasher, stripped_dir)
rep = crash(stripped, "null_deref", os.path.join(W, "reports-stripped"))
if rep:
    check_minidump("stripped", rep, debug_dirs={stripped: stripped_dir})

# arm64, when the arm64 build is there (make test builds it first).
if os.path.isfile(args.arm64_crasher) and shutil.which("qemu-aarch64"):
    d64 = os.path.join(W, "reports-arm64")
    os.makedirs(d64)
    r = subprocess.run(["qemu-aarch64", "-L", args.arm64_sysroot, args.arm64_crasher, "omit_fp", d64],
                       capture_output=True, timeout=300)
    new = [f for f in os.listdir(d64) if f.endswith(".flr")]
    if check(r.returncode != 0 and len(new) == 1, f"arm64: the crasher crashed with one report ({r.returncode})"):
        check_minidump("arm64 omit_fp", os.path.join(d64, new[0]), sysroot=args.arm64_sysroot)
else:
    print(f"arm64: not run ({args.arm64_crasher} or qemu-aarch64 missing: make arm64)")

tooltest.finish()
