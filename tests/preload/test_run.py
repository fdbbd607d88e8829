# SPDX-License-Identifier: MIT
# `faultline run` and libfaultline-preload.so on plain.c, a program built without faultline:
# the crash report printed and kept (frame 0 checked against nm's address of the faulting
# function), exit statuses, the program's own handlers (chained, recovering, exiting), what the
# library loads (readelf, /proc/self/maps), inheritance, stdin/stdout and signals passed through.
import json
import os
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tooltest import check, crashed_pc0, finish, nm_range, run, setup  # noqa: E402

args = setup("--plain", "--plain-static", "--preload", optional=("--plain-asan",))
W = args.workdir


def fl_run(name, *prog, opts=(), **kw):
    """faultline run with its own report directory W/name: (result, directory)."""
    d = os.path.join(W, name)
    r = subprocess.run([args.faultline, "run", "--report-dir", d, *opts, "--", args.plain, *prog],
                       capture_output=True, text=True, timeout=120, **kw)
    return r, d


def reports(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".flr")) \
        if os.path.isdir(d) else []


FAULT = nm_range(args.plain, "fault")


# ---- A crash: the report on stderr and in the directory, exit status 128 + SIGSEGV ----
r, d = fl_run("segv", "segv")
check(r.returncode == 128 + signal.SIGSEGV, f"segv: exit {r.returncode}")
check("died of SIGSEGV; its report: " in r.stderr, "segv: the report is announced")
check("[Crashed]" in r.stderr and " fault + " in r.stderr and " main + " in r.stderr,
      "segv: the crashed thread, symbolicated, on stderr")
rep = reports(d)
check(len(rep) == 1, f"segv: one report ({len(rep)})")
if rep:
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    check(f"(pid {doc['process']['pid']}) died" in r.stderr, "segv: the report is the child's")
    pc0 = crashed_pc0(doc)
    check(pc0 is not None and FAULT[0] <= pc0 < FAULT[1], f"segv: frame 0 in fault() per nm ({pc0})")

# ---- A program built with AddressSanitizer ----
# ASan stops a program whose first library is not its runtime, and LD_PRELOAD puts ours first:
# run (for the program) and the library (for what it executes) turn ASan's check off.
if args.plain_asan:
    ad = os.path.join(W, "asan")
    env = {k: v for k, v in os.environ.items() if k != "ASAN_OPTIONS"}
    r = subprocess.run([args.faultline, "run", "--report-dir", ad, "--", args.plain_asan, "exit",
                        "3"], capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 3 and "does not come first" not in r.stderr,
          f"asan: the program runs under faultline run ({r.returncode}, {r.stderr[-300:]!r})")
    # The library alone (LD_PRELOAD set by hand): a shell it is preloaded into passes the
    # setting on to the ASan program it executes.
    r = subprocess.run(["/bin/sh", "-c", f"{args.plain_asan} exit 4"], capture_output=True,
                       text=True, timeout=120,
                       env=dict(env, LD_PRELOAD=os.path.abspath(args.preload),
                                FAULTLINE_REPORT_DIR=ad))
    check(r.returncode == 4 and "does not come first" not in r.stderr,
          f"asan: executed by a program the library was preloaded into ({r.returncode}, "
          f"{r.stderr[-300:]!r})")
    r = subprocess.run([args.faultline, "run", "--report-dir", ad, "--", args.plain_asan, "segv"],
                       capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 1 and "AddressSanitizer: SEGV" in r.stderr and len(reports(ad)) == 1,
          f"asan: a fault is reported, then ASan's own report and exit status "
          f"({r.returncode}, {len(reports(ad))} reports, {r.stderr[-300:]!r})")
else:
    print("note: no AddressSanitizer build of plain (the compiler cannot, or a sanitizer build)")

# ---- Exit statuses, streams ----
r, d = fl_run("exit", "exit", "7")
check(r.returncode == 7 and r.stderr == "" and not reports(d), "exit 7 passed through, quietly")
r, _ = fl_run("cat", "cat", input="hello\nworld\n")
check(r.returncode == 0 and r.stdout == "hello\nworld\n", "stdin and stdout pass through")
r = subprocess.run([args.faultline, "run", "--", "/nonexistent/program"], capture_output=True,
                   text=True)
check(r.returncode == 127 and "cannot run" in r.stderr, "a missing program: 127")

# ---- Which signals ----
r, d = fl_run("abort", "abort")
check(r.returncode == 128 + signal.SIGABRT and "died of SIGABRT; its report" in r.stderr and
      len(reports(d)) == 1, "abort: reported")
r, d = fl_run("abort-segv-only", "abort", opts=("--signals", "SEGV"))
check(r.returncode == 128 + signal.SIGABRT and "wrote no report" in r.stderr and
      "--signals does not include it" in r.stderr and not reports(d),
      "--signals SEGV: abort is not caught, and run says so")
r, d = fl_run("bad-signals", "exit", "3", opts=("--signals", "SEGV,USR1"))
check(r.returncode == 2 and "--signals SEGV,USR1: only SEGV" in r.stderr and not os.path.exists(d),
      "--signals with another signal: a usage error, the program not started")
r = subprocess.run([args.faultline, "run", "--report-dir", "/proc/faultline-nope", "--",
                    args.plain, "segv"], capture_output=True, text=True, timeout=120)
check(r.returncode == 128 + signal.SIGSEGV and "not installed" in r.stderr and
      "faultline could not use the directory" in r.stderr,
      "a report directory the library cannot use: its line, then run's")

# ---- The program's own handlers, installed after the library's ----
r, d = fl_run("own-chain", "own-chain")
check(r.returncode == 128 + signal.SIGSEGV and "own handler" in r.stderr and
      len(reports(d)) == 1, "own handler that passes the signal on: its line, then our report")
r, d = fl_run("own-recover", "own-recover")
check(r.returncode == 0 and r.stdout == "recovered\n" and not reports(d),
      "own handler that recovers: the program goes on, no report")
r, d = fl_run("own-exit", "own-exit")
check(r.returncode == 5 and not reports(d), "own handler that exits: its status, no report")
# SIG_DFL set again for a crash signal, however the program sets it through libc: the library's
# action stays, the report is written, and the program dies of the signal as it asked. The report
# holds the fault's own context: frame 0 in fault() per nm, whether the signal came back from
# the raise (pending until the handler returned) or from the fault itself.
for mode, how in (("own-dfl", "signal(SIG_DFL) and raise in its handler (zstd)"),
                  ("own-dfl-iso", "ISO C signal(SIG_DFL) and raise in its handler"),
                  ("reset-dfl", "sigaction(SIG_DFL) at start (node)")):
    r, d = fl_run(mode, mode)
    rep = reports(d)
    ok = check(r.returncode == 128 + signal.SIGSEGV and len(rep) == 1 and
               "died of SIGSEGV; its report" in r.stderr, f"{mode}: {how}: one report")
    if ok:
        doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
        pc0 = crashed_pc0(doc)
        check(pc0 is not None and FAULT[0] <= pc0 < FAULT[1],
              f"{mode}: frame 0 in fault() per nm ({pc0})")
check(r.stdout == "SIG_DFL read back\n", f"reset-dfl: sigaction and signal read SIG_DFL back "
      f"({r.stdout.strip()!r})")
r, d = fl_run("own-dfl-raw", "own-dfl-raw")
check(r.returncode == 128 + signal.SIGSEGV and not reports(d) and
      "wrote no report" in r.stderr and "a handler of the program's own" in r.stderr,
      "own handler that sets SIG_DFL with the system call (past libc): no report, run says why")
r = subprocess.run([args.plain, "reset-dfl"], capture_output=True, text=True, timeout=120)
check(r.returncode == -signal.SIGSEGV and r.stdout == "SIG_DFL read back\n",
      "reset-dfl without the library: the same output, the same death")

# ---- A wrapper that passes its child's death on by raising the same signal (coreutils'
# timeout): its own report is the one run prints; the child's, the crash, is listed after it ----
TIMEOUT = shutil.which("timeout")
if check(TIMEOUT is not None, "coreutils' timeout is installed"):
    d = os.path.join(W, "wrapper")
    r = subprocess.run([args.faultline, "run", "--report-dir", d, "--", TIMEOUT, "60", args.plain,
                        "segv"], capture_output=True, text=True, timeout=120)
    listed = re.findall(r"^  (\S+\.flr) \(pid (\d+), SIGSEGV\)$", r.stderr, re.M)
    ok = check(r.returncode == 128 + signal.SIGSEGV and len(reports(d)) == 2 and
               "1 report from other processes since" in r.stderr and len(listed) == 1,
               f"timeout plain segv: the wrapper's report, then the child's listed ({listed})")
    if ok:
        doc = json.loads(run([args.faultline, "show", "--json", listed[0][0]]).stdout)
        pc0 = crashed_pc0(doc)
        check(doc["process"]["pid"] == int(listed[0][1]) and pc0 is not None and
              FAULT[0] <= pc0 < FAULT[1], f"the listed report is the child's crash ({pc0})")

# ---- Programs the loader will not preload into: run says so before and after ----
d = os.path.join(W, "static")
r = subprocess.run([args.faultline, "run", "--report-dir", d, "--", args.plain_static, "segv"],
                   capture_output=True, text=True, timeout=120)
check(r.returncode == 128 + signal.SIGSEGV and not reports(d) and
      "is statically linked: the loader will not preload faultline" in r.stderr and
      "faultline was not attached (the program is statically linked)" in r.stderr,
      "a static program: run says that faultline cannot attach, then that it was not attached")
r = subprocess.run([args.faultline, "run", "--report-dir", d, "--", args.plain, "exit", "0"],
                   capture_output=True, text=True, timeout=120)
check(r.returncode == 0 and r.stderr == "", "a dynamic program: no such line")
suid = os.path.join(W, "plain-suid")
if os.geteuid() == 0 and not os.statvfs(W).f_flag & os.ST_NOSUID:
    # Another user's set-user-ID program: the kernel marks its start secure, and ld.so ignores
    # LD_PRELOAD paths (run as root, so that the copy can be given to "nobody").
    subprocess.run(["cp", args.plain, suid], check=True)
    os.chown(suid, 65534, -1)
    os.chmod(suid, 0o4755)
    os.chmod(W, 0o755)
    d = os.path.join(W, "suid")
    r = subprocess.run([args.faultline, "run", "--report-dir", d, "--", suid, "segv"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 128 + signal.SIGSEGV and not reports(d) and
          "is set-user-ID to another user" in r.stderr and "not attached" in r.stderr,
          "another user's set-user-ID program: not attached, and run says why")
    os.remove(suid)
else:
    print("(set-user-ID check not run: needs root and a mount without nosuid)")

# ---- Threads ----
r, d = fl_run("threads", "threads")
rep = reports(d)
if check(r.returncode == 128 + signal.SIGSEGV and len(rep) == 1, "threads: one report"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    check(len(doc["threads"]) == 4 and all(t["frames"] for t in doc["threads"]),
          f"threads: 4 threads, each with frames ({len(doc['threads'])})")

# ---- Nothing but libc comes in ----
needed = [l.split("[")[1].rstrip("]") for l in run(["readelf", "-d", args.preload]).stdout.splitlines()
          if "(NEEDED)" in l]
check(sorted(needed) and all(n.startswith(("libc.so", "ld-linux")) for n in needed),
      f"readelf: the library needs only libc ({needed})")
r, _ = fl_run("maps", "maps")
libs = {l.split()[-1] for l in r.stdout.splitlines() if ".so" in l}
check(any("libfaultline-preload.so" in l for l in libs), "maps: the library is loaded")
check(not [l for l in libs if "protobuf" in l or "curl" in l or "libdw" in l or
           "libfaultline.so" in l], f"maps: nothing else of ours ({sorted(libs)})")

# ---- Inheritance ----
sh = ["sh", "-c", 'echo "[$LD_PRELOAD]"']
r = subprocess.run([args.faultline, "run", "--report-dir", os.path.join(W, "i"), "--", *sh],
                   capture_output=True, text=True)
check("libfaultline-preload.so" in r.stdout, "children inherit the library by default")
r = subprocess.run([args.faultline, "run", "--no-inherit", "--report-dir", os.path.join(W, "i"),
                    "--", *sh], capture_output=True, text=True)
check(r.stdout == "[]\n", f"--no-inherit: LD_PRELOAD is gone for children ({r.stdout.strip()})")

# ---- Signals sent to `faultline run` reach the program ----
p = subprocess.Popen([args.faultline, "run", "--report-dir", os.path.join(W, "term"), "--",
                      args.plain, "sleep"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
first = p.stdout.readline()
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
check(first == "sleeping\n" and rc == 128 + signal.SIGTERM and "report" not in p.stderr.read(),
      f"SIGTERM to faultline run ends the program: 143 ({rc})")

# ---- The library alone: a bad setting is said once, and the program still runs ----
env = dict(os.environ, LD_PRELOAD=args.preload, FAULTLINE_REPORT_DIR=os.path.join(W, "env"),
           FAULTLINE_SIGNALS="SEGV,NOPE\x1b[2J\u009b")
r = subprocess.run([args.plain, "exit", "0"], capture_output=True, text=True, env=env)
check(r.returncode == 0 and "not installed: FAULTLINE_SIGNALS" in r.stderr and
      "NOPE?[2J?" in r.stderr and "\x1b" not in r.stderr and "\u009b" not in r.stderr,
      f"a bad FAULTLINE_SIGNALS: said, cleaned for the terminal, program unharmed "
      f"({r.stderr.strip()!r})")
env["FAULTLINE_SIGNALS"] = "SIGSEGV 6"
r = subprocess.run([args.plain, "abort"], capture_output=True, text=True, env=env)
check(r.returncode == -signal.SIGABRT and len(reports(os.path.join(W, "env"))) == 1,
      "FAULTLINE_SIGNALS by name and number: abort reported")

finish()
