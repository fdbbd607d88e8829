#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline show --format apple|tombstone|json|text` on a sample report (fl_mkreport) whose
# crashed thread runs through the faultline binary itself (names checked against nm), and on the
# same report with a Mach exception appended (protobuf fields may come in any order), which every
# rendering must show; then a hostile report, file names and symbol through every view (list,
# show, triage, symbolicate), which must put no control character or invalid UTF-8 on a terminal.
import json
import os
import re
import subprocess

import tooltest

args = tooltest.setup("--mkreport")

check = tooltest.check


W = args.workdir
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(W, "cache"), FAULTLINE_DEBUG_DIR="")


def fl(*a):
    r = subprocess.run([args.faultline, *a], capture_output=True, text=True, env=ENV)
    check(r.returncode == 0, f"faultline {' '.join(a)}: exit {r.returncode} {r.stderr}")
    return r.stdout


exe = args.faultline
bid = re.search(r"Build ID: ([0-9a-f]+)", subprocess.run(["readelf", "-n", exe], capture_output=True,
                                                         text=True).stdout).group(1)
nm = subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True).stdout
funcs = {}
for line in nm.splitlines():
    m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tT] (fl_tool_\w+)$", line)
    if m and int(m.group(2), 16) > 16:
        funcs[m.group(3)] = int(m.group(1), 16)
names = sorted(funcs)[:3]
SLIDE = 0x560000000000
pcs = [SLIDE + funcs[names[0]] + 4] + [SLIDE + funcs[n] + 9 for n in names[1:]]
spec = f"{exe},gnu,{bid},{SLIDE:x},{SLIDE:x},{SLIDE + 0x4000000:x}"
rep = subprocess.run([args.mkreport, W, "--image", spec, *sum((["--frame", f"{p:x}"] for p in pcs), [])],
                     capture_output=True, text=True, check=True).stdout.strip()

# ---- apple ----
a = fl("show", "--format", "apple", rep)
for want in ("Incident Identifier: 00112233-4455-6677-8899-AABBCCDDEEFF\n",
             "Process:             sample-app [4242]\n",
             "Path:                /opt/sample/bin/sample-app\n",
             "Version:             1.2.3 (45)\n",
             "Date/Time:           2024-05-01 12:00:00.123 +0000\n",
             "Report Version:      104\n",
             "Exception Type:      EXC_BAD_ACCESS (SIGSEGV)\n",
             "Exception Subtype:   SEGV_MAPERR at 0x0000000000000010\n",
             "Termination Reason:  Namespace SIGNAL, Code 11 Segmentation fault: 11\n",
             "Triggered by Thread: 0\n",
             "Application Specific Information:\nscenario: sample\n",
             "\nThread 0 name:  main\nThread 0 Crashed:\n",
             "\nThread 1 name:  worker-1\nThread 1:\n",
             "\nBinary Images:\n"):
    check(want in a, f"apple: {want!r}")
frames = re.findall(r"^(\d+) +(\S+) *\t(0x[0-9a-f]{16}) (.*)$", a, re.M)
check(len(frames) >= 3 and [re.sub(r" \(\S+:\d+\)$", "", f[3]) for f in frames[:3]] ==
      [f"{names[0]} + 4"] + [f"{n} + 9" for n in names[1:]], f"apple frames: {frames[:3]}")
check(frames and re.search(r" \(\S+\.c:\d+\)$", frames[0][3]), "apple frame file:line")
check(frames and frames[0][1] == "faultline" and int(frames[0][2], 16) == pcs[0], "apple frame image and pc")
check(re.search(r"^Thread 0 crashed with (X86|ARM) Thread State \(64-bit\):\n  \S+: 0x[0-9a-f]{16}", a, re.M),
      "apple thread state")
img = re.search(r"^ +0x([0-9a-f]+) - +0x([0-9a-f]+) faultline \S+  <([0-9a-f]+)> (\S+)$", a, re.M)
check(img and int(img.group(1), 16) == SLIDE and img.group(3) == bid and img.group(4) == exe,
      f"apple binary image line: {img and img.group(0)}")

# ---- tombstone ----
t = fl("show", "--format", "tombstone", rep)
check(t.startswith("*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"), "tombstone header")
for want in ("Build fingerprint: 'sample-app/1.2.3 (45)'\n",
             "pid: 4242, tid: 1001, name: main  >>> /opt/sample/bin/sample-app <<<\n",
             "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000010\n",
             "\nbacktrace:\n",
             "\n--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---\n"
             "pid: 4242, tid: 1002, name: worker-1  >>> /opt/sample/bin/sample-app <<<\n",
             "annotations:\n    scenario: sample\n"):
    check(want in t, f"tombstone: {want!r}")
bt = re.findall(r"^      #(\d\d) pc ([0-9a-f]{16})  (\S+)(?: \((\S+)\+(\d+)\))?(?: \(BuildId: ([0-9a-f]+)\))?$", t, re.M)
check(len(bt) >= 3 and bt[0][:3] == ("00", f"{pcs[0] - SLIDE:016x}", exe), f"tombstone frame 0: {bt[:1]}")
check([(b[3], b[4]) for b in bt[:3]] == [(names[0], "4")] + [(n, "9") for n in names[1:]], f"tombstone symbols {bt[:3]}")
check(bt and bt[0][5] == bid, "tombstone BuildId")
check(re.search(r"^    \S+ +[0-9a-f]{16}  \S+ +[0-9a-f]{16}", t, re.M), "tombstone registers")
check(re.search(r"^memory map \(\d+ entries\):\n    [0-9a-f]{16}-[0-9a-f]{16}  " + re.escape(exe), t, re.M),
      "tombstone memory map")

# ---- json: the same document as --json; text: the default ----
j = fl("show", "--format", "json", rep)
check(j == fl("show", "--json", rep), "--format json is --json")
doc = json.loads(j)
check(doc["mach_exception"] is None, "json: no Mach exception")
check(fl("show", "--format", "text", rep) == fl("show", rep), "--format text is the default")
r = subprocess.run([args.faultline, "show", "--format", "xml", rep], capture_output=True, text=True)
check(r.returncode == 2 and "--format takes" in r.stderr, "unknown format refused")

# ---- A Mach exception, appended as field 10 (MachException) ----
varint, field = tooltest.varint, tooltest.field
codes = b"".join(varint(c) for c in (1, 0x10))
mach = field(1, 0, varint(1)) + field(2, 2, b"EXC_BAD_ACCESS") + field(3, 2, codes) + \
    field(4, 2, b"KERN_INVALID_ADDRESS")
rep_m = os.path.join(W, "mach.flr")
open(rep_m, "wb").write(open(rep, "rb").read() + field(10, 2, mach))
doc = json.loads(fl("show", "--json", rep_m))
check(doc["mach_exception"] == {"type": 1, "name": "EXC_BAD_ACCESS", "codes": ["0x1", "0x10"],
                                "code_name": "KERN_INVALID_ADDRESS"}, f"json mach_exception: {doc['mach_exception']}")
check(not doc["truncated"], "a field after `complete` still decodes")
a = fl("show", "--format", "apple", rep_m)
check("Exception Type:      EXC_BAD_ACCESS (SIGSEGV)\n" in a and
      "Exception Subtype:   KERN_INVALID_ADDRESS at 0x0000000000000010\n" in a and
      "Exception Codes:     0x0000000000000001, 0x0000000000000010\n" in a, "apple Mach exception")
check("Mach exception: EXC_BAD_ACCESS (KERN_INVALID_ADDRESS) codes 0x1 0x10\n" in
      fl("show", "--format", "tombstone", rep_m), "tombstone Mach exception")
check("Mach Exception:      EXC_BAD_ACCESS (KERN_INVALID_ADDRESS) codes 0x1 0x10\n" in fl("show", rep_m),
      "text Mach exception")

# A report naming FIFOs as its images (an absolute path, and a relative one, which is never
# taken from the current directory): every view and symbolicate finish, nothing is read from them.
fifo = os.path.join(W, "fifo-image")
os.mkfifo(fifo)
os.makedirs(os.path.join(W, "fifos"), exist_ok=True)
for path in (fifo, "fifo-image"):
    spec_f = f"{path},gnu,{bid},{SLIDE:x},{SLIDE:x},{SLIDE + 0x100000:x}"
    rep_f = subprocess.run([args.mkreport, os.path.join(W, "fifos"), "--image", spec_f,
                            "--frame", f"{pcs[0]:x}"], capture_output=True, text=True,
                           check=True).stdout.strip()
    for cmd in (["show"], ["show", "--json"], ["symbolicate"]):
        try:
            r = subprocess.run([args.faultline, *cmd, rep_f], capture_output=True, text=True,
                               env=ENV, cwd=W, timeout=30)
            check(r.returncode == 0, f"{cmd} on a report naming the FIFO {path}: exit {r.returncode}")
        except subprocess.TimeoutExpired:
            check(False, f"{cmd} on a report naming the FIFO {path}: hung")

# ---- Hostile strings (issue 15, point 5): a report written by hand, not by our writer (which
# would have replaced the invalid bytes), whose every string carries ESC, C1 CSI both as UTF-8
# (C2 9B) and as a raw byte, BEL, DEL and an invalid byte, in a directory and under file names
# that do too, naming as its image a copy of this binary (under such a name) whose symbol of
# frame 0 is renamed to such a string. Every view must keep these bytes off the terminal and keep
# valid UTF-8 whole (tooltest.terminal_unsafe: Python's strict UTF-8 decoder is the oracle).
EVIL = b"\x1b[31m\xc2\x9b\x9b\x07\x7f\xff\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac"  # ... "é日本"
CLEAN = "?[31m?????é日本".encode()  # what the cleaner makes of EVIL: one '?' a control or bad byte
AS_JSON = "\x1b[31m\u009b\ufffd\x07\x7f\ufffdé日本"  # and JSON: C1 kept (escaped), bad bytes U+FFFD


def zigzag(n):
    return 2 * n if n >= 0 else -2 * n - 1


def msg(*fields):
    return b"".join(fields)


hostile_bin = os.path.join(os.fsencode(W), b"bin" + EVIL)
evil_sym = b"sym" + EVIL
subprocess.run([b"objcopy", b"--redefine-sym", names[0].encode() + b"=" + evil_sym, os.fsencode(exe),
                hostile_bin], check=True)
hdir = os.path.join(os.fsencode(W), b"dir" + EVIL)
os.makedirs(hdir)
deltas = [pcs[0]] + [b - a for a, b in zip(pcs, pcs[1:])]
methods = bytes((1 | (3 << 4),)) + bytes(((len(pcs) + 1) // 2 - 1) * [3 | 3 << 4])
hreport = msg(
    field(1, 2, b"faultline"), field(2, 0, varint(2)),
    field(3, 2, msg(field(1, 2, bytes(range(16))), field(2, 0, varint(1714564800123456789)),
                    field(3, 0, varint(4242)), field(4, 2, b"/opt/proc" + EVIL),
                    field(5, 2, b"app" + EVIL), field(6, 2, b"ver" + EVIL), field(7, 2, b"os" + EVIL),
                    field(8, 2, b"rel" + EVIL), field(9, 2, b"osver" + EVIL),
                    field(10, 2, b"mach" + EVIL), field(12, 2, b"host" + EVIL), field(13, 0, varint(1)),
                    field(14, 2, b"reason" + EVIL))),
    field(4, 2, msg(field(1, 0, varint(11)), field(2, 2, b"SIG" + EVIL), field(3, 0, varint(1)),
                    field(4, 2, b"CODE" + EVIL), field(5, 0, varint(0x10)), field(6, 0, varint(1)),
                    field(8, 0, varint(77)))),
    field(5, 2, msg(field(1, 0, varint(77)), field(2, 2, b"thread" + EVIL), field(3, 0, varint(1)),
                    field(7, 2, b"stop" + EVIL),
                    field(10, 2, b"".join(varint(zigzag(d)) for d in deltas)),
                    field(11, 2, b"".join(varint(zigzag(d)) for d in [0x7ffd0000] + [16] * (len(pcs) - 1))),
                    field(12, 2, methods))),
    field(6, 2, msg(field(1, 2, hostile_bin), field(2, 2, bytes.fromhex(bid)), field(3, 0, varint(1)),
                    field(4, 0, varint(SLIDE)), field(5, 0, varint(SLIDE)), field(6, 0, varint(SLIDE + 0x4000000)),
                    field(7, 0, varint(SLIDE)), field(8, 0, varint(SLIDE + 0x4000000)))),
    field(7, 2, msg(field(1, 2, b"key" + EVIL), field(2, 2, b"value" + EVIL))),
    field(8, 2, msg(field(1, 2, b"note" + EVIL))),
    field(10, 2, msg(field(1, 0, varint(1)), field(2, 2, b"EXC" + EVIL), field(4, 2, b"KERN" + EVIL))),
    field(15, 0, varint(1)))
hrep = os.path.join(hdir, b"faultline-" + EVIL + b".flr")
open(hrep, "wb").write(hreport)
open(os.path.join(hdir, b"faultline-bad" + EVIL + b".flr"), "wb").write(b"not a report")


def flb(*a):
    r = subprocess.run([args.faultline, *a], capture_output=True, env=ENV)
    return r.returncode, r.stdout, r.stderr


def safe(what, *a, want=(), rcs=(0,)):
    rc, out, err = flb(*a)
    check(rc in rcs, f"{what}: exit {rc} {err[-300:]!r}")
    for name, o in (("stdout", out), ("stderr", err)):
        bad = tooltest.terminal_unsafe(o)
        check(bad is None, f"{what}: {name}: {bad}")
    for w in want:
        check(w in out, f"{what}: {w!r} not in the output (valid UTF-8 kept, the rest '?')")
    return out


for fmt, at in (("text", b" + 4"), ("apple", b" + 4"), ("tombstone", b"+4")):
    out = safe(f"show --format {fmt}", "show", "--format", fmt, hrep,
               want=[b"proc" + CLEAN, b"bin" + CLEAN, b"sym" + CLEAN + at, b"SIG" + CLEAN])
    check(out.count(CLEAN) >= 12, f"show --format {fmt}: most strings shown: {out.count(CLEAN)}")
    if fmt == "apple":
        check(b"Termination Reason:  Namespace SIGNAL, Code 11 SIG" + CLEAN + b": 11\n" in out,
              "apple: the signal's name in Termination Reason")
safe("list", "list", hdir, want=[b"dir" + CLEAN + b"/faultline-" + CLEAN + b".flr  2024-",
                                  b"SIG" + CLEAN + b" (CODE" + CLEAN + b")  /opt/proc" + CLEAN + b" [4242]",
                                  b"faultline-bad" + CLEAN + b".flr  ("])
safe("triage", "triage", "--no-progress", hdir, want=[b"sym" + CLEAN + b" + 4", b"bad" + CLEAN + b".flr: "],
     rcs=(0, 1))
safe("triage --json", "triage", "--json", "--no-progress", hdir, rcs=(0, 1))
for cmd in (["show", "--json"], ["symbolicate"]):
    out = safe(" ".join(cmd), *cmd, hrep, want=[b"\\u009b", "é日本".encode()])
    try:
        doc = json.loads(out)
    except ValueError as e:
        doc = None
        check(False, f"{cmd}: not JSON: {e}")
    if doc:  # escaped, not cleaned: the values are the strings, with U+FFFD for the bad bytes
        frames0 = doc["threads"][0]["frames"]
        check(doc["process"]["path"] == "/opt/proc" + AS_JSON, f"{cmd}: path {doc['process']['path']!r}")
        check(doc["signal"]["name"] == "SIG" + AS_JSON, f"{cmd}: signal {doc['signal']['name']!r}")
        check(frames0 and frames0[0]["symbol"] == "sym" + AS_JSON, f"{cmd}: symbol {frames0[:1]!r}")
        check(doc["images"][0]["path"].endswith("/bin" + AS_JSON), f"{cmd}: image {doc['images'][0]['path']!r}")
# `symbolicate FILE ADDR` prints the binary's symbol names (and the file's name in errors).
safe("symbolicate FILE ADDR", "symbolicate", hostile_bin, hex(funcs[names[0]] + 4),
     want=[b"sym" + CLEAN + b" + 4\n"])
safe("symbolicate FILE bad-address", "symbolicate", hostile_bin, b"zz" + EVIL, rcs=(1,))
safe("unknown option", "show", b"--x" + EVIL, hrep, rcs=(2,))

tooltest.finish()
