#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline inspect`, `faultline symbolicate FILE ADDR...` and `faultline show` on Mach-O files
# built here by zig cc (thin arm64 and x86_64, fat, stripped, dSYM from dsymutil) and on ELF,
# checked against llvm-objdump-14, llvm-nm-14, llvm-cxxfilt-14 and readelf; hostile segment and
# file names, and an empty symbol table placed anywhere.
import json
import os
import re
import shutil
import subprocess

import tooltest

args = tooltest.setup("--mkreport", "--zig", "--source")

check, run = tooltest.check, tooltest.run


def fl(*a):
    return run([args.faultline, *a], check_rc=False)


W = args.workdir
env = dict(os.environ, ZIG_GLOBAL_CACHE_DIR=os.path.join(W, "zig-cache"),
           ZIG_LOCAL_CACHE_DIR=os.path.join(W, "zig-cache"))

# ---- Fixtures ----
bins = {}
for arch, target in (("arm64", "aarch64-macos"), ("x86_64", "x86_64-macos")):
    out = os.path.join(W, f"app-{arch}")
    run([args.zig, "cc", "-g", "-O1", "-target", target, args.source, "-o", out], env=env)
    bins[arch] = out
fat = os.path.join(W, "app-fat")
run(["llvm-lipo-14", "-create", bins["arm64"], bins["x86_64"], "-output", fat])
stripped = os.path.join(W, "app-arm64-stripped")
shutil.copy(bins["arm64"], stripped)
run(["llvm-strip-14", stripped])
strip_x = os.path.join(W, "app-arm64-strip-x")
shutil.copy(bins["arm64"], strip_x)
run(["llvm-strip-14", "-x", strip_x])
# A dSYM made by dsymutil, in a bundle whose name matches nothing: found by the UUID scan.
syms_a = os.path.join(W, "symsA")
run(["dsymutil-14", bins["arm64"], "-o", os.path.join(syms_a, "renamed.dSYM")])
# The unstripped file under the stripped one's name: found as DIR/<basename>.
syms_b = os.path.join(W, "symsB")
os.makedirs(syms_b)
shutil.copy(bins["arm64"], os.path.join(syms_b, "app-arm64-stripped"))


def objdump(*a):
    return run(["llvm-objdump-14", "--macho", *a]).stdout


def uuid_of(path, arch=None):
    out = objdump("--private-headers", *( [f"--arch={arch}"] if arch else []), path)
    return re.search(r"uuid ([0-9A-F-]{36})", out).group(1).replace("-", "").lower()


def functions(path):
    """{address: name} of the defined functions in __TEXT,__text (llvm-objdump's symbol table)."""
    out = {}
    for line in objdump("--syms", path).splitlines():
        m = re.match(r"([0-9a-f]{16}) [lg]\s+F __TEXT,__text (\S+)$", line)
        if m and m.group(2) != "__mh_execute_header":
            out[int(m.group(1), 16)] = m.group(2)
    return out


def text_vmaddr(path):
    out = objdump("--private-headers", path)
    m = re.search(r"segname __TEXT\n\s+vmaddr 0x([0-9a-f]+)\n\s+vmsize 0x([0-9a-f]+)", out)
    return int(m.group(1), 16), int(m.group(2), 16)


def segments(path, arch=None):
    out = objdump("--private-headers", *([f"--arch={arch}"] if arch else []), path)
    return re.findall(r"cmd LC_SEGMENT_64\n\s+cmdsize \d+\n\s+segname (\S+)", out)


def unwind_entries(path):
    """[(function offset, encoding)] of every second-level entry."""
    out = objdump("--unwind-info", path)
    ents = []
    for m in re.finditer(r"\[\d+\]: function offset=0x([0-9a-f]+), encoding(?:\[\d+\])?=0x([0-9a-f]+)", out):
        ents.append((int(m.group(1), 16), int(m.group(2), 16)))
    return ents


def display(name):
    name = name[1:] if name.startswith("_") else name
    if name.startswith("_Z"):
        name = run(["llvm-cxxfilt-14", name]).stdout.strip()
    return name


# ---- inspect ----
for arch, path in bins.items():
    r = fl("inspect", "--json", "--unwind", path)
    check(r.returncode == 0, f"inspect {arch} exit {r.returncode}: {r.stderr}")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    check(doc.get("arch") == arch, f"inspect {arch}: arch {doc.get('arch')}")
    check(doc.get("uuid") == uuid_of(path), f"inspect {arch}: uuid {doc.get('uuid')} vs objdump")
    check([s["name"] for s in doc.get("segments", [])] == segments(path),
          f"inspect {arch}: segments {doc.get('segments')}")
    check(doc.get("symbols", 0) >= len(set(functions(path).values())),
          f"inspect {arch}: symbol count {doc.get('symbols')}")
    base, _ = text_vmaddr(path)
    want = [(base + off, enc) for off, enc in unwind_entries(path)]
    got = [(int(e["start"], 16), int(e["encoding"], 16)) for e in doc.get("unwind", [])]
    check(len(want) > 0 and got == want, f"inspect {arch} --unwind: {got} vs objdump {want}")
    check(all(e.get("rule") for e in doc.get("unwind", [])), f"inspect {arch}: every entry has a rule")
    t = fl("inspect", "--unwind", path)
    check(t.returncode == 0 and f"arch: {arch}" in t.stdout and "compact unwind:" in t.stdout,
          f"inspect text {arch}: {t.stdout[:300]}")

r = fl("inspect", "--json", fat)
doc = json.loads(r.stdout) if r.returncode == 0 else None
lipo_archs = run(["llvm-lipo-14", "-archs", fat]).stdout.split()
check(isinstance(doc, list) and [d["arch"] for d in doc] == lipo_archs and len(doc) == 2,
      f"inspect fat: {r.stdout[:300]} {r.stderr}")
if isinstance(doc, list):
    for d in doc:
        check(d["uuid"] == uuid_of(fat, d["arch"]), f"inspect fat {d['arch']}: uuid")

r = fl("inspect", "--json", stripped)
doc = json.loads(r.stdout) if r.returncode == 0 else {}
check(doc.get("local_symbols") is False and doc.get("uuid") == uuid_of(bins["arm64"]),
      f"inspect stripped: {r.stdout[:300]}")

# ELF: the CLI itself, against readelf's build-id.
r = fl("inspect", "--json", "--unwind", args.faultline)
doc = json.loads(r.stdout) if r.returncode == 0 else {}
notes = run(["readelf", "-n", args.faultline]).stdout
bid = re.search(r"Build ID: ([0-9a-f]+)", notes)
check(bid and doc.get("uuid") == bid.group(1) and doc.get("format") == "elf" and
      doc.get("unwind") == [], f"inspect ELF: {r.stdout[:300]}")

# Errors are clear and non-zero.
r = fl("inspect", "/etc/hostname")
check(r.returncode == 1 and "not a 64-bit ELF or Mach-O" in r.stderr, f"inspect text file: {r.stderr}")
r = fl("inspect", os.path.join(W, "missing"))
check(r.returncode == 1 and "cannot open" in r.stderr, f"inspect missing: {r.stderr}")

# Hostile names (issue 15, point 5): a segment renamed to ESC, C1 CSI as UTF-8 (C2 9B) and as a
# raw byte, BEL and an invalid byte, then "é", in a file whose name ends the same way. Text shows
# '?' for each control or bad byte and keeps "é"; JSON escapes the controls (C1 too) and has
# U+FFFD for the bad bytes; neither output may carry a control byte or invalid UTF-8.
EVIL = b"\x1b[31m\xc2\x9b\x9b\x07\xff\xc3\xa9"  # 11 bytes: fits a 16-byte segname
CLEAN, AS_JSON = "?[31m????é".encode(), "\x1b[31m\u009b\ufffd\x07\ufffdé"
orig = segments(bins["arm64"])
victim = [n for n in orig if n not in ("__TEXT", "__LINKEDIT")][0]
data = bytearray(open(bins["arm64"], "rb").read())
off = 32
for _ in range(int.from_bytes(data[16:20], "little")):
    if int.from_bytes(data[off:off + 4], "little") == 0x19 and data[off + 8:off + 24].rstrip(b"\0") == victim.encode():
        data[off + 8:off + 24] = EVIL.ljust(16, b"\0")
    off += int.from_bytes(data[off + 4:off + 8], "little")
hostile = os.path.join(os.fsencode(W), b"app" + EVIL)
open(hostile, "wb").write(data)
for opts in ([], ["--json"]):
    r = subprocess.run([args.faultline, "inspect", *opts, hostile], capture_output=True)
    check(r.returncode == 0, f"inspect {opts} hostile segment name: exit {r.returncode} {r.stderr!r}")
    for name, out in (("stdout", r.stdout), ("stderr", r.stderr)):
        bad = tooltest.terminal_unsafe(out)
        check(bad is None, f"inspect {opts} hostile segment name: {name}: {bad}")
    if opts:
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        want = [AS_JSON if n == victim else n for n in orig]
        check([g["name"] for g in doc.get("segments", [])] == want, f"inspect --json: {doc.get('segments')}")
    else:
        check(b"\n    " + CLEAN + b" " in r.stdout and b"app" + CLEAN + b": Mach-O" in r.stdout,
              f"inspect: segment and file names cleaned: {r.stdout[:400]!r}")

# An empty symbol table whose symoff points past the file (issue 15, point 7): no symbols, so
# no lookup finds one, whatever symoff says (the file was refused as malformed before).
data = bytearray(open(bins["arm64"], "rb").read())
off = 32
for _ in range(int.from_bytes(data[16:20], "little")):
    if int.from_bytes(data[off:off + 4], "little") == 0x2:  # LC_SYMTAB: symoff, nsyms at +8, +12
        data[off + 8:off + 16] = (0xfffffff0).to_bytes(4, "little") + bytes(4)
    off += int.from_bytes(data[off + 4:off + 8], "little")
no_syms = os.path.join(W, "app-arm64-nsyms0")
open(no_syms, "wb").write(data)
r = fl("inspect", "--json", no_syms)
doc = json.loads(r.stdout) if r.returncode == 0 else {}
check(doc.get("symbols") == 0 and doc.get("uuid") == uuid_of(bins["arm64"]), f"nsyms 0: {r.stdout[:300]} {r.stderr}")
main_addr = [a for a, n in functions(bins["arm64"]).items() if n == "_main"][0]
r = fl("symbolicate", no_syms, hex(main_addr))
check(r.returncode == 0 and r.stdout == "??\n", f"nsyms 0: symbolicate {r.returncode} {r.stdout!r} {r.stderr}")

# ---- symbolicate ----
def symbolicate_all(path, funcs, extra=()):
    addrs = sorted(funcs)
    queries, expect = [], []
    for i, a in enumerate(addrs):
        end = addrs[i + 1] if i + 1 < len(addrs) else a + 2
        for off in (0, 1, end - a - 1):
            if off < end - a:
                queries.append(hex(a + off))
                expect.append(f"{display(funcs[a])} + {off}")
    r = fl("symbolicate", *extra, path, *queries)
    return r, r.stdout.splitlines(), expect


for arch, path in bins.items():
    r, got, expect = symbolicate_all(path, functions(path))
    check(r.returncode == 0 and got == expect, f"symbolicate {arch}: {got} vs {expect}")
    check("fixture::Widget::draw(int) + 0" in got, f"symbolicate {arch}: C++ demangled")

r, got, expect = symbolicate_all(fat, functions(bins["x86_64"]), ["--arch", "x86_64"])
check(r.returncode == 0 and got == expect, f"symbolicate fat --arch x86_64: {got}")
r = fl("symbolicate", fat, "0x100000000")
check(r.returncode == 2 and "arm64" in r.stderr and "x86_64" in r.stderr, f"fat without --arch: {r.stderr}")

# Stripped: nothing resolves; locals stripped: static functions are unknown, not a neighbour.
funcs = functions(bins["arm64"])
r = fl("symbolicate", stripped, *[hex(a + 1) for a in funcs])
check(r.returncode == 0 and r.stdout.splitlines() == ["??"] * len(funcs), f"stripped: {r.stdout}")
static_addr = [a for a, n in funcs.items() if n == "_helper_static"][0]
main_addr = [a for a, n in funcs.items() if n == "_main"][0]
r = fl("symbolicate", strip_x, hex(static_addr + 4), hex(main_addr + 4))
check(r.stdout.splitlines() == ["??", "main + 4"], f"strip -x: {r.stdout}")

# ELF: functions of the CLI itself, against llvm-nm.
nm = run(["llvm-nm-14", "--defined-only", "-S", args.faultline]).stdout
elf_funcs = {}
for line in nm.splitlines():
    m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tT] (fl_tool_\w+)$", line)
    if m and int(m.group(2), 16) > 4:
        elf_funcs[int(m.group(1), 16)] = (m.group(3), int(m.group(2), 16))
check(len(elf_funcs) >= 5, f"ELF functions found by nm: {len(elf_funcs)}")
q = [hex(a + s - 1) for a, (n, s) in sorted(elf_funcs.items())]
r = fl("symbolicate", args.faultline, *q)
want = [f"{n} + {s - 1}" for a, (n, s) in sorted(elf_funcs.items())]
check(r.returncode == 0 and r.stdout.splitlines() == want, f"symbolicate ELF: {r.stdout[:300]}")
r = fl("symbolicate", args.faultline, "zz")
check(r.returncode == 1 and r.stdout.strip() == "??" and "not a hex address" in r.stderr, "bad address")

# ---- show: a report whose images are Mach-O ----
def report(path, uuid_hex, funcs_arch, frames, slide=0x5a000):
    base, size = text_vmaddr(bins[funcs_arch])
    spec = f"{path},macho,{uuid_hex},{slide:x},{base + slide:x},{base + size + slide:x}"
    d = os.path.join(W, "reports")
    os.makedirs(d, exist_ok=True)
    r = run([args.mkreport, d, "--image", spec, *sum((["--frame", f"{pc + slide:x}"] for pc in frames), [])])
    return r.stdout.strip()


def show_symbols(rep, *dirs):
    a = ["show", "--json"]
    for d in dirs:
        a += ["--symbols", d]
    r = fl(*a, rep)
    if r.returncode != 0:
        return None
    doc = json.loads(r.stdout)
    return [f["symbol"] for f in doc["threads"][0]["frames"]]


def addr(arch, name):
    return [a for a, n in functions(bins[arch]).items() if n == name][0]


# Frame 0 is exact; the callers are return addresses (looked up at pc - 1).
frames_arm = [addr("arm64", "_crash_here") + 8, addr("arm64", "_middle") + 12,
              addr("arm64", "__ZN7fixture6Widget4drawEi") + 4, addr("arm64", "_main") + 8]
want = ["crash_here", "middle", "fixture::Widget::draw(int)", "main"]
u_arm = uuid_of(bins["arm64"])
rep = report(stripped, u_arm, "arm64", frames_arm)
check(show_symbols(rep) == [None] * 4, "stripped binary alone: no names")
check(show_symbols(rep, syms_a) == want, f"dSYM found by UUID scan: {show_symbols(rep, syms_a)}")
check(show_symbols(rep, syms_b) == want, f"DIR/<basename>: {show_symbols(rep, syms_b)}")
rep = report(bins["arm64"], u_arm, "arm64", frames_arm)
check(show_symbols(rep) == want, f"recorded path: {show_symbols(rep)}")
bad = ("00" if u_arm[:2] != "00" else "11") + u_arm[2:]
rep = report(bins["arm64"], bad, "arm64", frames_arm)
check(show_symbols(rep, syms_a, syms_b) == [None] * 4, "UUID mismatch: no names")
frames_x = [addr("x86_64", "_crash_here") + 4, addr("x86_64", "_middle") + 9, addr("x86_64", "_main") + 5]
rep = report(fat, uuid_of(bins["x86_64"]), "x86_64", frames_x)
check(show_symbols(rep) == ["crash_here", "middle", "main"], f"fat slice by UUID: {show_symbols(rep)}")
t = fl("show", "--symbols", syms_a, report(stripped, u_arm, "arm64", frames_arm))
check(t.returncode == 0 and "fixture::Widget::draw(int) + 4" in t.stdout, f"show text: {t.stdout[-600:]}")

tooltest.finish()
