#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline show --format apple|tombstone|json|text` on a sample report (fl_mkreport) whose
# crashed thread runs through the faultline binary itself (names checked against nm), and on the
# same report with a Mach exception appended (protobuf fields may come in any order), which every
# rendering must show.
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
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


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

tooltest.finish()
