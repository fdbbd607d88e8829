#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A Go program with cgo (go/crash.go) under `faultline run` (docs/preload.md, "Go"). Go's
# runtime installs its handlers over faultline's, for every signal, and ends a crash it handles
# itself with exit(2) unless GOTRACEBACK=crash, which `faultline run` sets when the user has
# not. Oracles: Go's own traceback on stderr (its runtime's walk, from its own tables: the
# faulting pc and each frame's pc) and nm (the C functions' ranges). Checks: a fault in C code
# reached through cgo and a nil pointer read in Go code each leave Go's traceback, the death by
# SIGABRT and one report whose crashed thread holds Go's frames with Go's pcs, the faulting
# frame named (the frame under runtime.sigpanic holds the faulting pc itself), the goroutine
# past Go's switches to its system stack (asmcgocall, and systemstack for a fatal error, the
# `unlock` case) as Go walks it, and every thread
# captured (Go's handler for faultline's capture signal is kept behind faultline's); triage
# groups by the faulting code; a recovered panic leaves no report; a signal the program waits
# for with os/signal on faultline's capture signal still reaches it; GOTRACEBACK set by the
# user is kept. Skipped (77) without Go (make test installs Debian's golang-go).
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tooltest import check, crash_site, finish, run, setup  # noqa: E402

args = setup("--preload")
go = shutil.which("go") or ("/usr/lib/go/bin/go" if os.path.exists("/usr/lib/go/bin/go") else None)
if not go:
    print("SKIP: no go (Debian's golang-go; scripts/setup-deps.sh installs it)")
    sys.exit(77)
W = args.workdir
src = os.path.join(W, "src")
shutil.copytree(os.path.join(os.path.dirname(os.path.abspath(__file__)), "go"), src)
exe = os.path.join(W, "crash")
genv = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
genv.update(GOCACHE=os.path.join(W, "gocache"), GOPATH=os.path.join(W, "gopath"),
            GOFLAGS="-mod=mod", GOPROXY="off", CGO_ENABLED="1", HOME=W)
r = subprocess.run([go, "build", "-o", exe, "."], cwd=src, capture_output=True, text=True,
                   timeout=600, env=genv)
if r.returncode != 0:
    sys.exit(f"go build failed: {r.stderr[-800:]}")
# nm's functions (sized), for the C frames.
syms = []
for line in run(["nm", "-S", "--defined-only", exe]).stdout.splitlines():
    p = line.split()
    if len(p) == 4 and p[2] in "tT":
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))


def nm_name(pc):
    return next((n for a, s, n in syms if a <= pc < a + s), None)


def crash(name, mode, env_extra=None):
    """Runs the program under faultline run: (result, reports)."""
    rd = os.path.join(W, name)
    env = {k: v for k, v in os.environ.items() if k != "GOTRACEBACK"}
    env.update(env_extra or {})
    r = subprocess.run([args.faultline, "run", "--preload", args.preload, "--report-dir", rd,
                        "--", exe, mode], capture_output=True, text=True, timeout=300, env=env)
    reps = sorted(os.path.join(rd, f) for f in os.listdir(rd) if f.endswith(".flr")) \
        if os.path.isdir(rd) else []
    return r, reps


def go_frames(text, header):
    """Go's traceback after the line `header`: [(function, pc)] up to the next blank line; the
    inlined frames (no pc) are left out."""
    out, lines = [], text.splitlines()
    if header not in lines:
        return out
    i = lines.index(header) + 1
    while i + 1 < len(lines) and lines[i]:
        m = re.search(r" pc=0x([0-9a-f]+)$", lines[i + 1])
        if m:
            out.append((lines[i][:lines[i].rfind("(")], int(m.group(1), 16)))  # (the arguments')
        i += 2
    return out


def threads_ok(doc, what):
    """Every thread captured and walked to its outermost frame."""
    bad = [(t["tid"], t["state"], t.get("unwind_stop")) for t in doc["threads"]
           if t["state"] != "captured" or not t["frames"]]
    check(len(doc["threads"]) >= 3 and not bad and
          not any("capture signal" in n for n in doc.get("notes", [])),
          f"{what}: every thread captured ({len(doc['threads'])}; not: {bad}; "
          f"{doc.get('notes')})")


def aborted(name, message):
    """Runs `crash name`; checks Go's message, the death by SIGABRT and one report. Returns
    (the run, the report's JSON, its crashed thread's frames as [(symbol without .abi0, pc)]),
    or None."""
    r, reps = crash(name, name)
    if not check(r.returncode == 128 + signal.SIGABRT and message in r.stderr and len(reps) == 1,
                 f"{name}: Go's {message!r}, death by SIGABRT ({r.returncode}), one report "
                 f"({len(reps)}): {r.stderr[-400:]!r}"):
        return None
    doc = json.loads(run([args.faultline, "show", "--json", reps[0]]).stdout)
    doc["report"] = reps[0]
    ours = [(f["symbol"].removesuffix(".abi0"), int(f["pc"], 16)) for f in doc["threads"][0]["frames"]]
    return r, doc, ours


def signature(rep):
    tri = run([args.faultline, "triage", "--json", rep]).stdout
    return json.loads(tri)[0]["signature"] if tri.strip() else ""


# 1. A fault in C code reached through cgo.
got = aborted("cgo", "fatal error: unexpected signal")
m = got and re.search(r"\[signal SIGSEGV: segmentation violation code=\S+ addr=0x0 "
                      r"pc=0x([0-9a-f]+)\]", got[0].stderr)
if check(m, "cgo: Go says where the fault was"):
    r, doc, ours = got
    fault_pc = int(m.group(1), 16)
    fr = doc["threads"][0]["frames"]
    pcs = [pc for _, pc in ours]
    i = pcs.index(fault_pc) if fault_pc in pcs else -1
    check(doc["signal"]["name"] == "SIGABRT" and doc["threads"][0]["crashed"] and i > 0 and
          fr[i - 1]["symbol"] == "runtime.sigpanic" and fr[i]["symbol"] == nm_name(fault_pc) and
          (fr[i]["symbol"] or "").startswith("c_fault"),
          f"cgo: the faulting pc, Go's ({fault_pc:#x}), under runtime.sigpanic and named as nm "
          f"names it ({nm_name(fault_pc)}): {ours[max(i - 1, 0):i + 3]}")
    callers = [nm_name(pc - 1) or "" for pc in pcs[i + 1:i + 3]] if i > 0 else []
    check(len(callers) == 2 and callers[0].startswith("c_middle") and
          callers[1].endswith("_Cfunc_c_entry") and
          [f["symbol"] for f in fr[i + 1:i + 3]] == callers,
          f"cgo: then c_middle and the cgo wrapper per nm ({callers})")
    # Go's walk of the system stack it crashed on ("runtime stack:"): the same frames, pcs.
    gs = go_frames(r.stderr, "runtime stack:")
    check(gs and gs[-1][0] == "runtime.sigpanic" and i >= len(gs) and
          ours[i - len(gs):i] == gs,
          f"cgo: Go's runtime stack, frame by frame ({gs}) above the fault ({ours[:i]})")
    # Past the switch from the system stack (runtime.asmcgocall) the goroutine that called into
    # C, by its frame records: Go's walk of it frame by frame to its end, but runtime.cgocall,
    # whose return address no record holds.
    gg = [g for g in go_frames(r.stderr, "goroutine 1 [syscall]:") if g[0] != "runtime.cgocall"]
    a = next((j for j, f in enumerate(ours) if f[0] == "runtime.asmcgocall"), -1)
    check(len(gg) >= 4 and a > i and ours[a + 1:] == gg,
          f"cgo: past runtime.asmcgocall, Go's walk of the goroutine ({gg}) in ours ({ours[a + 1:]})")
    threads_ok(doc, "cgo")
    site = crash_site(args.faultline, doc["report"])
    check(site.startswith(f"frame {i}, c_fault"), f"cgo: show's Crash Site is the fault ({site!r})")
    sig = signature(doc["report"])
    check(re.fullmatch(r"c_fault \| c_middle \| _cgo_[0-9a-f]+_Cfunc_c_entry", sig),
          f"cgo: triage groups by the C code, past Go's crash machinery ({sig!r})")

# 2. A nil pointer read in Go code, not recovered: Go's panic, then SIGABRT.
got = aborted("gopanic", "panic: runtime error: invalid memory address")
if got:
    r, doc, ours = got
    fr = doc["threads"][0]["frames"]
    gs = [("runtime.gopanic" if n == "panic" else n, pc)
          for n, pc in go_frames(r.stderr, "goroutine 1 [running]:")]
    k = next((j for j in range(len(ours)) if ours[j:j + len(gs)] == gs), -1)
    check(len(gs) >= 5 and k >= 0 and k + len(gs) == len(ours),
          f"gopanic: Go's walk of the goroutine, frame by frame to its end ({gs}), in ours "
          f"({ours})")
    m = re.search(r"\[signal SIGSEGV: segmentation violation code=\S+ addr=0x0 pc=0x([0-9a-f]+)\]",
                  r.stderr)
    gf = next((f for f in fr if f["symbol"] == "main.goFault"), None)
    check(m and gf is not None and fr[fr.index(gf) - 1]["symbol"] == "runtime.sigpanic" and
          int(gf["pc"], 16) == int(m.group(1), 16) and nm_name(int(gf["pc"], 16)) == "main.goFault",
          f"gopanic: main.goFault under runtime.sigpanic, at Go's faulting pc ({gf})")
    threads_ok(doc, "gopanic")
    site = crash_site(args.faultline, doc["report"])
    check(gf is not None and site == f"frame {fr.index(gf)}, main.goFault + 0",
          f"gopanic: show's Crash Site is the fault ({site!r})")
    sig = signature(doc["report"])
    check(sig.startswith("main.goFault | main.main | runtime.main"),
          f"gopanic: triage groups by the Go code ({sig!r})")

# 2b. A fatal error Go raises on its system stack (runtime.systemstack): past the switch, the
# goroutine, frame by frame as Go walks it.
got = aborted("unlock", "fatal error: sync: unlock of unlocked mutex")
if got:
    r, doc, ours = got
    gs = go_frames(r.stderr, "goroutine 1 [running]:")
    s_ = next((j for j, f in enumerate(ours) if f[0] == "runtime.systemstack"), -1)
    check(len(gs) >= 5 and s_ > 0 and ours[s_ + 1:] == gs,
          f"unlock: past runtime.systemstack, Go's walk of the goroutine ({gs}) in ours "
          f"({ours[s_ + 1:]})")
    threads_ok(doc, "unlock")
    sig = signature(doc["report"])
    check(sig == "sync.(*Mutex).unlockSlow | main.goUnlock | main.main",
          f"unlock: triage groups by the code that unlocked ({sig!r})")

# 3. Recovered panics: Go's own business, no report.
r, reps = crash("recover", "recover")
check(r.returncode == 0 and r.stdout.endswith("recovered 3\n") and not reps,
      f"recover: the program recovers three times and exits 0 ({r.returncode}, "
      f"{r.stdout.strip()!r}), no report ({len(reps)})")

# 4. os/signal on the signal faultline captures threads with (the highest real-time one).
rd = os.path.join(W, "notify")
env = {k: v for k, v in os.environ.items() if k != "GOTRACEBACK"}
p = subprocess.Popen([args.faultline, "run", "--preload", args.preload, "--report-dir", rd, "--",
                      exe, "notify"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     env=env)
ready = p.stdout.readline()
kids = run(["pgrep", "-P", str(p.pid)], check_rc=False).stdout.split()
if ready == "ready\n" and kids:
    time.sleep(0.2)
    os.kill(int(kids[0]), signal.SIGRTMAX)
out, err = p.communicate(timeout=120)
check(p.returncode == 0 and out == f"got signal {int(signal.SIGRTMAX)}\n",
      f"notify: the program's os/signal gets the signal sent to it ({p.returncode}, {out!r}, "
      f"{err[-300:]!r})")

# 5. The user's GOTRACEBACK stands: with "single" Go ends the crash with exit(2), where no
# signal handler sees it (docs/preload.md).
r, reps = crash("single", "cgo", {"GOTRACEBACK": "single"})
check(r.returncode == 2 and "fatal error: unexpected signal" in r.stderr and not reps,
      f"single: GOTRACEBACK=single kept: exit 2 ({r.returncode}), no report ({len(reps)})")
finish()
