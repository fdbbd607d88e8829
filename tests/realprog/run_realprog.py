#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Real programs (issue 14): Debian's python3, bash, perl, sqlite3, xz, mawk and zstd crashed under
# libfaultline-preload.so; every captured thread of each report compared frame by frame with gdb
# and eu-stack, at the moment faultline released its threads and in the kernel's core (README.md).
import ctypes
import difflib
import glob
import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tooltest import check, finish, run, setup  # noqa: E402

# Threads the report lists without frames (state blocked, timeout, exited, omitted) are shown as
# "not captured" and do not fail the suite while this is True. A thread that blocks the capture
# signal is walked from its system call (docs/threads.md) and then compared like any other; one
# that blocks it while it computes (xz's workers, in liblzma) leaves nothing to read without its
# cooperation. Threads with frames are always compared, whatever their state.
ALLOW_NOT_CAPTURED = True

HERE = os.path.dirname(os.path.abspath(__file__))
GDB_ORACLE = os.path.join(HERE, "gdb_oracle.py")
RELEASE_POINT = "fl_threads_release"  # crash/threads_linux.c: the parked threads go on from here
PROGRAMS = {"python3": "/usr/bin/python3", "bash": "/bin/bash", "perl": "/usr/bin/perl",
            "sqlite3": "/usr/bin/sqlite3", "xz": "/usr/bin/xz", "mawk": "/usr/bin/mawk",
            "zstd": "/usr/bin/zstd"}
TOOLS = ("gdb", "eu-stack")
# Not needed by the others: a scenario whose program is missing is skipped alone.
NODE = "/usr/bin/node"
DEEP_STACK = 256 * 1024  # RLIMIT_STACK of the deep-recursion scenarios: about 2,000 frames

args = setup("--preload", "--ownlib")
for a in ("faultline", "preload", "ownlib", "workdir"):
    setattr(args, a, os.path.abspath(getattr(args, a)))
W = args.workdir

# ---- What the suite needs ----
missing = [p for p in PROGRAMS.values() if not os.access(p, os.X_OK)]
missing += [t for t in TOOLS if not shutil.which(t)]
if missing:
    print(f"SKIP: not installed: {', '.join(missing)} (scripts/setup-deps.sh installs them)")
    sys.exit(77)
if not glob.glob("/usr/lib/debug/.build-id/*/*.debug"):
    print("note: no debug files in /usr/lib/debug/.build-id (libc6-dbg): libc frames have no "
          "names in the detail blocks; pcs are compared all the same")
pattern = open("/proc/sys/kernel/core_pattern").read().strip()
CORES = not (pattern.startswith("|") or "/" in pattern)
if not CORES:
    print(f"core_pattern {pattern!r} does not write a core into the program's directory: the "
          "kernel-core checks (a core exists, the core's stacks) are skipped; the stacks are "
          "still compared at the release point")

ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("PYTHON", "FAULTLINE_", "LD_PRELOAD", "DEBUGINFOD"))}
ENV["DEBUGINFOD_URLS"] = ""  # gdb and eu-stack: no network


# ---- The scenarios ----
PY_THREADS = r"""
import ctypes, os, queue, select, signal, socket, sys, threading, time
lock = threading.Lock(); lock.acquire()
def blocking(f, *fargs):   # as xz's workers do: every signal blocked, faultline's too
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    f(*fargs)
r2, w2 = os.pipe()
q = queue.Queue()
a, b = socket.socketpair()
r, w = os.pipe()
ev = threading.Event()
calls = {"sleep": (time.sleep, 1000), "lock": (lock.acquire,), "recv": (a.recv, 16),
         "select": (select.select, [r], [], [], 1000), "queue": (q.get,),
         "event": (ev.wait, 1000), "read": (os.read, r, 1),
         "blk-sleep": (blocking, time.sleep, 1000), "blk-read": (blocking, os.read, r2, 1)}
libc = ctypes.CDLL(None)
def named(name, f, *fargs):
    libc.prctl(15, name.encode())   # PR_SET_NAME: the report's thread names say which call
    f(*fargs)
for name, (f, *fargs) in calls.items():
    threading.Thread(target=named, args=(name, f, *fargs), daemon=True).start()
blocked_in_kernel(len(calls))
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
ctypes.string_at(0)   # strlen(NULL) in libc, called by ctypes through libffi: SIGSEGV
"""
PY_FAULTHANDLER = r"""
import ctypes, faulthandler, os, sys, threading, time
assert faulthandler.is_enabled()
lock = threading.Lock(); lock.acquire()
threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
threading.Thread(target=lock.acquire, daemon=True).start()
blocked_in_kernel(2)
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
ctypes.string_at(0)
"""
PY_DEEP = r"""
import os, sys
sys.setrecursionlimit(10**6)
def f(n):   # each level goes through C (map), so the C stack grows until it overflows
    return list(map(f, [n + 1]))
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
f(0)
"""
# Waits (bounded) until n threads besides this one sleep in the kernel.
PY_PRELUDE = r"""
def blocked_in_kernel(n):
    import os, time
    me = str(os.getpid())
    for _ in range(500):
        states = []
        for t in os.listdir("/proc/self/task"):
            if t != me:
                with open(f"/proc/self/task/{t}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        if len(states) >= n and all(s == "S" for s in states):
            return
        time.sleep(0.01)
"""
PERL_FAULT = ('$| = 1; print "ready $$\\n"; my $go = <STDIN>; '
              'my $s = unpack("p", pack("Q", 8)); print length($s), "\\n";')  # strlen(8): SIGSEGV
SQLITE_FAULT = (
    # A tokenizer module pointer of 0x10 for fts3 (Debian builds the two-argument
    # fts3_tokenizer()): creating the table reads the module's xCreate at 0x18, in libsqlite3.
    "select fts3_tokenizer('simple', x'1000000000000000');\n"
    "create virtual table t using fts3(x, tokenize=simple);\n")


# Node.js with every function compiled by V8's baseline compiler (Sparkplug) when first run: the
# frames of leaf, mid and the script are code V8 wrote into its heap (no image, no unwind tables),
# between the C++ of process.kill and V8's entry builtins in node's own text.
NODE_JIT = r"""
const fs = require('fs');
function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += i * 3 % 7; return s; }
function leaf(k) { if (k) process.kill(process.pid, 'SIGSEGV'); return k; }
function mid(n, k) { return hot(n) + leaf(k); }
for (let j = 0; j < 2000; j++) mid(10, 0);
process.stdout.write('ready ' + process.pid + '\n');
fs.readSync(0, Buffer.alloc(16));
mid(10, 1);
"""


def scenario(name, argv, *, program, how="preload", ready="line", trigger="stdin", sig="SIGSEGV",
             stack=None, preload_extra=(), stderr_has=(), min_threads=1, script=None,
             script_name="script.py", deep=False, jit=False, oracles=None, what=""):
    """oracles: the names of the oracles compared (None: all), with the reason for the others
    in why_oracles; jit: the crashed thread must cross frames of code in no image."""
    return dict(name=name, argv=argv, program=program, how=how, ready=ready, trigger=trigger,
                sig=getattr(signal, sig), signame=sig, stack=stack, preload_extra=preload_extra,
                stderr_has=stderr_has, min_threads=min_threads, script=script,
                script_name=script_name, deep=deep, jit=jit, oracles=oracles, what=what)


PY = PROGRAMS["python3"]
SCENARIOS = [
    scenario("py-threads", [PY, "script.py"], program=PY, script=PY_PRELUDE + PY_THREADS,
             min_threads=10, what="7 threads blocked (sleep, lock, recv, select, queue get, "
             "event wait, pipe read), 2 more that block every signal (sleep, pipe read: walked "
             "from their system calls); ctypes.string_at(0) faults in libc's strlen"),
    scenario("py-faulthandler", [PY, "-X", "faulthandler", "script.py"], program=PY, how="run",
             script=PY_PRELUDE + PY_FAULTHANDLER, min_threads=3,
             stderr_has=("Fatal Python error: Segmentation fault", "died of SIGSEGV"),
             what="faultline run; faulthandler installs after us, dumps, restores ours and "
             "raises again: the report starts in faulthandler's handler"),
    scenario("py-deep", [PY, "script.py"], program=PY, script=PY_DEEP, stack=DEEP_STACK,
             deep=True, what="C stack overflow through map(); frames omitted in the middle"),
    scenario("bash-kill", [PROGRAMS["bash"], "-c", 'echo "ready $$"; read -r go; kill -SEGV $$'],
             program=PROGRAMS["bash"], how="run", stderr_has=("died of SIGSEGV",),
             what="faultline run; kill -SEGV $$ (a sent signal, raised again in the handler)"),
    scenario("bash-deep", [PROGRAMS["bash"], "-c", 'echo "ready $$"; read -r go; f() { f; }; f'],
             program=PROGRAMS["bash"], stack=DEEP_STACK, deep=True,
             what="unbounded shell function recursion overflows the C stack"),
    scenario("perl-fault", [PROGRAMS["perl"], "-e", PERL_FAULT], program=PROGRAMS["perl"],
             what='unpack("p") of the pointer 8: strlen faults, called by pp_unpack'),
    scenario("perl-own-before", [PROGRAMS["perl"], "-e", PERL_FAULT], program=PROGRAMS["perl"],
             preload_extra=(args.ownlib,),
             stderr_has=("own-handler: installed first", "own-handler: called"),
             what="a SIGSEGV handler installed before ours (own_handler.c, constructor); ours "
             "reports, restores it, the fault repeats into it, it restores SIG_DFL"),
    scenario("perl-ignored", [PROGRAMS["bash"], "-c", "trap '' SEGV; exec \"$0\" -e \"$1\"",
                              PROGRAMS["perl"], PERL_FAULT], program=PROGRAMS["perl"],
             what="SIGSEGV ignored by the parent shell, inherited over exec: we chain to "
             "SIG_IGN, the kernel resets a fault it cannot deliver to SIG_DFL"),
    scenario("sqlite3-fts3", [PROGRAMS["sqlite3"], ":memory:"], program=PROGRAMS["sqlite3"],
             ready="sqlite", what="fts3 tokenizer module at 0x10: a fault inside libsqlite3"),
    scenario("mawk-kill",
             [PROGRAMS["mawk"], '{ s = s substr($0, 1, 1) } length(s) > 4096 { s = "" }'],
             program=PROGRAMS["mawk"], ready="caught", trigger="kill",
             what="mawk busy on its input (random bytes); SIGSEGV sent by the test"),
    # Ready once a worker thread exists: zstd starts them after main installed its handler.
    scenario("zstd-own-dfl", [PROGRAMS["zstd"], "-c"], program=PROGRAMS["zstd"], ready="tasks:2",
             trigger="kill", stderr_has=("Caught SIGSEGV signal, printing stack",),
             what="zstd's own handler, installed after ours, prints a backtrace, puts SIG_DFL "
             "back and raises again: the library keeps its action in place (SIG_DFL reads as "
             "'report, then default')"),
    scenario("xz-threads", [PROGRAMS["xz"], "-1", "-T4", "--block-size=1MiB", "-c"],
             program=PROGRAMS["xz"], ready="tasks:5", trigger="kill",
             what="4 worker threads (they block every signal, but for faultline's: they are "
             "captured); SIGSEGV sent to the main thread"),
    # gdb is not an oracle here: it finds no way out of V8's code (no unwind tables, and its
    # prologue analysis fails there) and prints stack words as frames (README.md).
    scenario("node-jit", [NODE, "--always-sparkplug", "--perf-basic-prof", "script.js"], program=NODE,
             script=NODE_JIT, script_name="script.js", jit=True, min_threads=2,
             oracles=("eu-stack@release", "eu-stack@core"),
             what="process.kill(SIGSEGV) from JavaScript compiled by V8 (Sparkplug): the walk "
             "crosses frames of code in no image by their frame records; eu-stack only"),
]


# ---- Running one ----
def tgkill(tgid, tid, sig):
    """The signal to one thread (the main one: tid = tgid). A signal sent to the process goes to
    any thread that does not block it, and the library keeps SIGSEGV unblocked in every thread
    (docs/preload.md): xz's workers, which block every signal, took it now and then."""
    nr = {"x86_64": 234, "aarch64": 131}[os.uname().machine]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(ctypes.c_long(nr), ctypes.c_long(tgid), ctypes.c_long(tid),
                    ctypes.c_long(sig)) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

class Failed(Exception):
    pass


def read_line(f, deadline):
    """A line from the pipe f, or None at the deadline."""
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([f], [], [], left)[0]:
            return None
        chunk = os.read(f.fileno(), 1)
        if not chunk:
            return None
        buf += chunk
    return buf.decode(errors="replace").strip()


def find_core(d):
    """The ELF core file the kernel wrote into d, or None."""
    for f in sorted(os.listdir(d)):
        p = os.path.join(d, f)
        try:
            with open(p, "rb") as fh:
                head = fh.read(18)
        except OSError:
            continue
        if head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 4:  # ET_CORE
            return p
    return None


def run_scenario(sc):
    """Runs sc under gdb's hold; returns what it left (raises Failed when it cannot go on)."""
    base = os.path.join(W, sc["name"])
    rundir, repdir = os.path.join(base, "run"), os.path.join(base, "reports")
    os.makedirs(rundir)
    if sc["script"]:
        with open(os.path.join(rundir, sc["script_name"]), "w") as f:
            f.write(sc["script"])
    preload = ":".join((args.preload, *sc["preload_extra"]))
    env = dict(ENV)
    if sc["how"] == "run":
        argv = [args.faultline, "run", "--report-dir", repdir, "--preload", preload, "--",
                *sc["argv"]]
    else:
        argv = sc["argv"]
        env.update(LD_PRELOAD=preload, FAULTLINE_REPORT_DIR=repdir)

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        if sc["stack"]:
            hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
            resource.setrlimit(resource.RLIMIT_STACK, (sc["stack"], hard))

    errf = open(os.path.join(base, "stderr.txt"), "w+")
    if sc["trigger"] == "kill":  # xz: compresses random bytes until the signal
        with open("/dev/urandom", "rb") as rnd:
            p = subprocess.Popen(argv, cwd=rundir, env=env, stdin=rnd, stdout=subprocess.DEVNULL,
                                 stderr=errf, preexec_fn=limits)
    else:
        p = subprocess.Popen(argv, cwd=rundir, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=errf, preexec_fn=limits)
    g = None
    out = {"base": base, "rundir": rundir, "repdir": repdir,
           "gcore": os.path.join(base, "release.core")}
    try:
        deadline = time.monotonic() + 30
        pid = p.pid
        if sc["ready"] == "line":
            line = read_line(p.stdout, deadline)
            if not line or not line.startswith("ready "):
                raise Failed(f"no 'ready' line from the program ({line!r})")
            pid = int(line.split()[1])
        elif sc["ready"] == "sqlite":
            p.stdin.write(b".print ready\n")
            p.stdin.flush()
            if read_line(p.stdout, deadline) != "ready":
                raise Failed("sqlite3 did not answer .print")
        elif sc["ready"] == "caught":  # faultline's handler in place (SigCgt has the signal)
            while True:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        cgt = next(int(l.split()[1], 16) for l in f if l.startswith("SigCgt:"))
                except (OSError, StopIteration, ValueError):
                    cgt = 0
                if cgt >> (sc["sig"] - 1) & 1:
                    break
                if time.monotonic() > deadline or p.poll() is not None:
                    raise Failed("the program's handler for the signal was never installed")
                time.sleep(0.02)
        elif sc["ready"].startswith("tasks:"):
            want = int(sc["ready"].split(":")[1])
            while len(os.listdir(f"/proc/{pid}/task")) < want:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise Failed(f"the program did not start {want} threads")
                time.sleep(0.02)
        out["pid"] = pid

        armed = os.path.join(base, "armed")
        hold_js = os.path.join(base, "release-gdb.json")
        genv = dict(ENV, RP_MODE="hold", RP_JSON=hold_js, RP_ARMED=armed, RP_GCORE=out["gcore"],
                    RP_BREAK=RELEASE_POINT)
        g = subprocess.Popen(["gdb", "-batch", "-nx", "-p", str(pid), "-x", GDB_ORACLE],
                             env=genv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not os.path.exists(armed):
            if g.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        if not os.path.exists(armed):
            gout = g.communicate(timeout=30)[0] if g.poll() is not None else ""
            if "ptrace" in gout or "Operation not permitted" in gout:
                print(f"SKIP: gdb cannot attach to the program (ptrace refused):\n{gout}")
                p.kill()
                sys.exit(77)
            raise Failed(f"gdb did not set its breakpoint:\n{gout[-2000:]}")

        try:
            if sc["trigger"] == "kill":
                tgkill(pid, pid, sc["sig"])
            elif sc["ready"] == "sqlite":
                p.stdin.write(SQLITE_FAULT.encode())
                p.stdin.close()
            else:
                p.stdin.write(b"go\n")
                p.stdin.flush()
        except OSError as e:
            raise Failed(f"the program was gone before the crash was set off ({e})")
        try:
            out["gdb_out"] = g.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            raise Failed("gdb did not finish within 120 s")
        try:
            out["status"] = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise Failed("the program did not die within 60 s of gdb's detach")
        try:
            with open(hold_js) as f:
                out["release_gdb"] = json.load(f)
        except (OSError, ValueError) as e:
            raise Failed(f"gdb left no thread dump ({e}):\n{out['gdb_out'][-2000:]}")
        if not out["release_gdb"].get("stopped"):
            raise Failed(f"gdb: {out['release_gdb'].get('error')}\n{out['gdb_out'][-2000:]}")
    finally:
        for proc in (g, p):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if out.get("pid", p.pid) != p.pid and "status" not in out:
            try:  # faultline run's child, which said its pid: do not leave it behind
                os.kill(out["pid"], signal.SIGKILL)
            except OSError:
                pass
        if p.stdin and not p.stdin.closed:
            try:
                p.stdin.close()
            except OSError:
                pass
        errf.seek(0)
        out["stderr"] = errf.read()
        errf.close()
    return out


# ---- The oracles ----
def gdb_core(program, core, js):
    r = subprocess.run(["gdb", "-batch", "-nx", "-x", GDB_ORACLE, program, core],
                       env=dict(ENV, RP_MODE="dump", RP_JSON=js), capture_output=True, text=True,
                       timeout=300)
    try:
        with open(js) as f:
            return json.load(f)
    except (OSError, ValueError):
        raise Failed(f"gdb on {core} left no dump:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


EU_FRAME = re.compile(r"^#(\d+)\s+0x([0-9a-f]+)(?:\s+(.*))?$")


def eu_stack(program, core):
    """{tid: {"frames": [...], "error": str|None}} from eu-stack on core."""
    r = subprocess.run(["eu-stack", "--core", core, "--executable", program, "-n", "0",
                        "--debuginfo-path=/usr/lib/debug:.debug"],
                       env=ENV, capture_output=True, text=True, timeout=300)
    threads, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("TID "):
            cur = int(line.split()[1].rstrip(":"))
            threads[cur] = {"frames": [], "error": None}
        elif cur is not None and (m := EU_FRAME.match(line)):
            threads[cur]["frames"].append({"pc": int(m.group(2), 16), "type": "NORMAL",
                                           "name": m.group(3)})
    for line in r.stderr.splitlines():
        m = re.search(r"tid (\d+)", line)
        if m and int(m.group(1)) in threads:
            threads[int(m.group(1))]["error"] = line.strip()
    if not threads:
        raise Failed(f"eu-stack on {core}: no threads ({r.returncode}):\n{r.stderr[-2000:]}")
    return threads


def gdb_threads(doc):
    """{lwp: {"frames", "error"}} without gdb's inline and tail-call frames (README.md)."""
    return {t["lwp"]: {"frames": [f for f in t["frames"]
                                  if f["type"] not in ("INLINE", "TAILCALL")],
                       "error": t["error"]} for t in doc["threads"]}


def mark_sigtramps(threads, pcs):
    """eu-stack does not say which frames are signal trampolines: gdb does, for the same state."""
    for t in threads.values():
        for f in t["frames"]:
            if f["pc"] in pcs or f["name"] == "__restore_rt":
                f["type"] = "SIGTRAMP"


def strip_handlers(frames, in_faultline):
    """Drops the frames of faultline's handler: everything down to and including the signal
    frame that ends the first run of frames holding faultline code (README.md, rule 3). (Not
    the last: a one-shot handler of the program's runs under faultline's reset_trampoline,
    whose frame is the program's own handler's, which the report keeps.)
    Returns (frames, whether anything was dropped)."""
    seen = False
    for i, f in enumerate(frames):
        if f["type"] == "SIGTRAMP":
            if seen:
                return frames[i + 1:], True
            seen = False
        elif in_faultline(f["pc"]):
            seen = True
    return frames, False


def compare(rt, oframes):
    """Aligns the oracle's frames with the report thread rt's; returns a result dict."""
    rf = rt["frames"]
    rp = [int(f["pc"], 16) for f in rf]
    op = [f["pc"] for f in oframes]
    omitted, at = rt.get("frames_omitted") or 0, rt.get("frames_omitted_at") or 0
    # Segments: (report index of the first frame, its true depth, report pcs, oracle pcs)
    if omitted:
        segs = [(0, 0, rp[:at], op[:at]), (at, at + omitted, rp[at:], op[at + omitted:])]
    elif rt.get("frames_truncated"):
        segs = [(0, 0, rp, op[:len(rp)])]
    else:
        segs = [(0, 0, rp, op)]
    res = {"lost": 0, "added": 0, "differing": 0, "first": None}
    for ri0, depth0, a, b in segs:
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            n, m = i2 - i1, j2 - j1  # report frames, oracle frames
            res["differing"] += min(n, m)
            res["added"] += max(0, n - m)
            res["lost"] += max(0, m - n)
            if res["first"] is None:
                res["first"] = {"depth": depth0 + i1, "report": rf[ri0 + i1] if i1 < i2 else None,
                                "oracle": oframes[depth0 + j1] if j1 < j2 else None,
                                "tag": tag, "n": n, "m": m}
    res["exact"] = not (res["lost"] or res["added"] or res["differing"])
    return res


# ---- Checking one scenario ----
ROWS, DETAILS = [], []
TIMES = {}


def fmt_frame(f, report):
    if f is None:
        return "(none)"
    if report:
        sym = f.get("symbol") or "???"
        off = f" + {f['offset']}" if f.get("offset") is not None else ""
        return f"{f['pc']} {sym}{off} [{f.get('method')}]"
    return f"{f['pc']:#x} {f.get('name') or '???'} [{f['type']}]"


def side_by_side(f, label, rt, oframes, dropped):
    """Writes the report's frames beside the oracle's (its dropped handler frames marked) to f,
    for whoever looks into a difference; the comparison itself is compare()'s."""
    f.write(f"== {label}: report {len(rt['frames'])} frames, omitted "
            f"{rt.get('frames_omitted', 0)} at {rt.get('frames_omitted_at', 0)}; oracle "
            f"{len(oframes)}, of which {dropped} dropped (faultline's handlers)\n")
    for o in oframes[:dropped]:
        f.write(f"   {'':40}  - {fmt_frame(o, False)}\n")
    rf, at = rt["frames"], rt.get("frames_omitted_at", 0)
    omitted = rt.get("frames_omitted", 0)
    rest = oframes[dropped:]
    for depth in range(max(len(rest), len(rf) + omitted)):
        if omitted and at <= depth < at + omitted:
            if depth == at:
                f.write(f"   ... {omitted} frames omitted by the report ...\n")
            continue
        ri = depth if depth < at or not omitted else depth - omitted
        r = fmt_frame(rf[ri], True) if ri < len(rf) else ""
        o = fmt_frame(rest[depth], False) if depth < len(rest) else ""
        same = ri < len(rf) and depth < len(rest) and int(rf[ri]["pc"], 16) == rest[depth]["pc"]
        f.write(f"{depth:4} {'=' if same else '!'} {r:60}  {o}\n")


def analyse(sc, out):
    name = sc["name"]
    # The death
    st = out["status"]
    if sc["how"] == "run":
        check(st == 128 + sc["sig"], f"{name}: faultline run exits {128 + sc['sig']} ({st})")
    else:
        check(st == -sc["sig"], f"{name}: died of {sc['signame']} (wait status {st})")
    for s in sc["stderr_has"]:
        check(s in out["stderr"], f"{name}: stderr has {s!r}")
    # One report, ours
    reps = sorted(glob.glob(os.path.join(out["repdir"], "*.flr")))
    if not check(len(reps) == 1, f"{name}: exactly one report ({len(reps)})"):
        return
    doc = json.loads(run([args.faultline, "show", "--json", reps[0]]).stdout)
    check(doc["process"]["pid"] == out["pid"], f"{name}: the report is the program's "
          f"(pid {doc['process']['pid']}, program {out['pid']})")
    check(doc["signal"]["name"] == sc["signame"], f"{name}: the report's signal "
          f"({doc['signal']['name']})")
    rthreads = doc["threads"]
    check(len(rthreads) >= sc["min_threads"],
          f"{name}: at least {sc['min_threads']} threads ({len(rthreads)})")
    check(rthreads and rthreads[0]["crashed"], f"{name}: threads[0] crashed")
    check(rthreads and rthreads[0]["tid"] == out["pid"],
          f"{name}: the main thread crashed (tid {rthreads[0]['tid'] if rthreads else None})")
    fl_images = [(int(i["start"], 16), int(i["end"], 16)) for i in doc["images"]
                 if i["path"].endswith("/libfaultline-preload.so")]
    check(len(fl_images) == 1, f"{name}: libfaultline-preload.so among the images")

    def in_faultline(pc):
        return any(lo <= pc < hi for lo, hi in fl_images)

    if sc["deep"]:
        t0 = rthreads[0]
        check(t0.get("frames_omitted", 0) > 0, f"{name}: frames omitted in the crashed thread "
              f"({t0.get('frames_omitted')})")

    # The oracles: at the release point (gdb live, eu-stack on gdb's core of that moment), and in
    # the kernel's core.
    oracles = []
    rel_gdb = gdb_threads(out["release_gdb"])
    tramps = {f["pc"] for t in rel_gdb.values() for f in t["frames"] if f["type"] == "SIGTRAMP"}
    oracles.append(("gdb@release", rel_gdb, True))
    if os.path.exists(out["gcore"]):
        rel_eu = eu_stack(sc["program"], out["gcore"])
        mark_sigtramps(rel_eu, tramps)
        oracles.append(("eu-stack@release", rel_eu, True))
        os.unlink(out["gcore"])
    else:
        check(False, f"{name}: gdb wrote a core at the release point")
    if CORES:
        core = find_core(out["rundir"])
        if check(core is not None, f"{name}: the kernel dumped a core"):
            core_gdb = gdb_threads(gdb_core(sc["program"], core,
                                            os.path.join(out["base"], "core-gdb.json")))
            tramps |= {f["pc"] for t in core_gdb.values() for f in t["frames"]
                       if f["type"] == "SIGTRAMP"}
            core_eu = eu_stack(sc["program"], core)
            mark_sigtramps(core_eu, tramps)
            oracles += [("gdb@core", core_gdb, False), ("eu-stack@core", core_eu, False)]
            os.unlink(core)

    if sc["jit"] and rthreads:
        fr = rthreads[0]["frames"]
        check(any(f["image"] is None for f in fr[1:]) and all(f["method"] != "scan" for f in fr),
              f"{name}: the crashed thread crosses frames in no image, and nothing was scanned "
              f"({[(f['pc'], f['image'], f['method']) for f in fr[:24]]})")
        # Their names from the map V8 wrote for perf (--perf-basic-prof), which show reads.
        jit = [f["symbol"] for f in fr if f["image"] is None]
        check(jit and all(jit) and any(s.startswith("JS:") for s in jit),
              f"{name}: every frame in no image named from /tmp/perf-{out['pid']}.map ({jit})")
        perf_map = f"/tmp/perf-{out['pid']}.map"
        if os.path.exists(perf_map):
            os.unlink(perf_map)
    if sc["oracles"] is not None:
        DETAILS.append(f"{name}: compared with {', '.join(sc['oracles'])} only (the scenario's "
                       "comment says why)")
        oracles = [o for o in oracles if o[0] in sc["oracles"]]
    for oname, oth, at_release in oracles:
        sidefile = open(os.path.join(out["base"], f"compare-{oname.replace('@', '-')}.txt"), "w")
        row = {"scenario": name, "oracle": oname, "threads": len(rthreads), "exact": 0,
               "lost": 0, "added": 0, "differing": 0, "not_captured": 0, "moved": 0,
               "switched": 0}
        check(set(oth) == {t["tid"] for t in rthreads},
              f"{name} {oname}: the same threads (report {sorted(t['tid'] for t in rthreads)}, "
              f"oracle {sorted(oth)})")
        for rt in rthreads:
            label = f"{name} {oname} tid {rt['tid']} ({rt.get('name')})"
            ot = oth.get(rt["tid"])
            if rt["state"] != "captured" and not rt["frames"]:
                row["not_captured"] += 1
                if oname == "gdb@release":  # once per thread, with what gdb saw there
                    of = ot["frames"] if ot else []
                    DETAILS.append(
                        f"{name} tid {rt['tid']} ({rt.get('name')}): not captured (state "
                        f"{rt['state']}, {len(rt['frames'])} frames); gdb at the release point: "
                        f"{len(of)} frames, innermost {fmt_frame(of[0], False) if of else '-'}" +
                        (", allowed (ALLOW_NOT_CAPTURED)" if ALLOW_NOT_CAPTURED else ", fails"))
                check(ALLOW_NOT_CAPTURED, f"{label}: state {rt['state']}")
                continue
            if ot is None:
                check(False, f"{label}: no such thread in the oracle")
                continue
            # gdb does not unwind from a stack to one lower in memory ("previous frame inner to
            # this frame"): when the capture ran on faultline's crash stack (the signal came on a
            # small stack, docs/async-safety.md), gdb stopped inside the capture stops at the
            # switch (README.md, "switched"). The thread is back on its own stack in the cores.
            if (oname == "gdb@release" and rt["crashed"] and "inner to this frame" in
                    (ot.get("error") or "") and ot["frames"] and
                    ot["frames"][-1]["name"] == "fl_call_on_stack"):
                row["switched"] += 1
                DETAILS.append(f"{label} [crashed] [switched: gdb stops at faultline's stack "
                               f"switch (fl_call_on_stack), {len(ot['frames'])} frames; compared "
                               f"in the cores{'' if CORES else ', which are not available here'}]")
                continue
            frames, stripped = strip_handlers(ot["frames"], in_faultline)
            res = compare(rt, frames)
            side_by_side(sidefile, label, rt, ot["frames"], len(ot["frames"]) - len(frames))
            # In the kernel's core a thread faultline had released may have gone on before the
            # dump (README.md, "moved"): only a thread still in faultline's handler, and the
            # crashed one, show what faultline walked.
            moved = not at_release and not rt["crashed"] and not stripped
            if res["exact"]:
                row["exact"] += 1
                continue
            if moved:
                row["moved"] += 1
            else:
                row["lost"] += res["lost"]
                row["added"] += res["added"]
                row["differing"] += res["differing"]
                check(False, f"{label}: frames differ")
            fd = res["first"]
            why = ""
            if moved:
                restarted = (res["differing"] == 1 and not res["lost"] and not res["added"] and
                             fd["depth"] == 0 and fd["report"] and fd["oracle"] and
                             fd["oracle"]["pc"] == int(fd["report"]["pc"], 16) + 2)
                why = (" [moved: back in its restarted system call, pc past the syscall "
                       "instruction; not counted]" if restarted else
                       " [moved: released before the dump and went on; not counted]")
            DETAILS.append(
                f"{label}{why}"
                f"{' [crashed]' if rt['crashed'] else ''}: lost {res['lost']}, added "
                f"{res['added']}, differing {res['differing']}; report {len(rt['frames'])} frames"
                f" (+{rt.get('frames_omitted', 0)} omitted), oracle {len(frames)}"
                f"{' after dropping the handler frames' if stripped else ''}"
                f"{'; oracle error: ' + ot['error'] if ot.get('error') else ''}\n"
                f"    first difference at frame {fd['depth']} ({fd['tag']}, {fd['n']} report / "
                f"{fd['m']} oracle frames):\n"
                f"      report: {fmt_frame(fd['report'], True)}\n"
                f"      oracle: {fmt_frame(fd['oracle'], False)}")
        ROWS.append(row)
        sidefile.close()


# ---- Main ----
only = [n for n in os.environ.get("FL_REALPROG_ONLY", "").split(",") if n]
t_all = time.monotonic()
for sc in SCENARIOS:
    if only and sc["name"] not in only:
        continue
    if not os.access(sc["program"], os.X_OK):
        print(f"note: {sc['name']} skipped: {sc['program']} is not installed")
        continue
    t0 = time.monotonic()
    try:
        out = run_scenario(sc)
        analyse(sc, out)
    except Failed as e:
        check(False, f"{sc['name']}: {e}")
    except subprocess.TimeoutExpired as e:
        check(False, f"{sc['name']}: {e}")
    finally:  # cores are large: none is kept
        base = os.path.join(W, sc["name"])
        rundir = os.path.join(base, "run")
        for c in (os.path.join(base, "release.core"), os.path.isdir(rundir) and find_core(rundir)):
            if c and os.path.exists(c):
                os.unlink(c)
    TIMES[sc["name"]] = time.monotonic() - t0

cols = ("scenario", "oracle", "threads", "exact", "lost", "added", "differing", "not_captured",
        "moved", "switched")
heads = ("scenario", "oracle", "threads", "exact", "lost", "added", "differing", "not capt.",
         "moved", "switched")
width = [max([len(h)] + [len(str(r[c])) for r in ROWS]) for h, c in zip(heads, cols)]
print()
print("  ".join(h.ljust(w) for h, w in zip(heads, width)))
for r in ROWS:
    print("  ".join(str(r[c]).ljust(w) for c, w in zip(cols, width)))
print("(exact: captured threads whose frames equal the oracle's after alignment; lost/added/"
      "differing: frames; not capt.: threads the report lists without frames; moved: threads "
      "released before the kernel dumped its core, not compared; switched: the crashed thread, "
      "where gdb stops at faultline's switch to its own stack, compared in the cores. README.md)")
print()
if DETAILS:
    print("Details:")
    for d in DETAILS:
        print("  " + d)
    print()
print("Scenarios:")
for sc in SCENARIOS:
    if sc["name"] in TIMES:
        print(f"  {sc['name']:16} {TIMES[sc['name']]:5.1f} s  {sc['what']}")
print(f"All: {time.monotonic() - t_all:.1f} s; side-by-side stacks in {W}/*/compare-*.txt")
finish()
