# SPDX-License-Identifier: MIT
# libfaultline-preload.so alone (LD_PRELOAD and FAULTLINE_REPORT_DIR, no `faultline run`) on
# plain.c, natively and under an emulator (the arm64 build: qemu-aarch64, whose guest loader does
# the preloading): each process dies of its own signal with exactly one report, or none where the
# program's own handler takes the signal; frame 0 in the faulting function per nm; the program's
# SIG_DFL read as "report, then the default" (docs/preload.md); a program that closes or reuses the
# library's descriptors, deletes the report directory, or replaces its alternate stack with a
# small one, still gets its report;
# one that limits its file sizes, or runs under a seccomp filter, still dies of its own signal;
# one whose main thread has exited still gets a whole report. Reports are decoded by the build host's CLI.
import argparse
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tooltest import check, crash_site, crashed_pc0, finish, nm_range, run  # noqa: E402

ap = argparse.ArgumentParser()
for name in ("--faultline", "--plain", "--preload", "--workdir"):
    ap.add_argument(name, required=True)
ap.add_argument("--runner", default="", help="prefix command (e.g. qemu-aarch64 -L SYSROOT)")
ap.add_argument("--cxx", default="", help="a C++ compiler for throw.cpp (native builds)")
args = ap.parse_args()
shutil.rmtree(args.workdir, ignore_errors=True)
os.makedirs(args.workdir)
runner = args.runner.split()


def run_in(d, *prog, env_extra=None, exe=None):
    """Runs plain (or exe) with the library preloaded and report directory d: (result,
    reports)."""
    env = {"LD_PRELOAD": os.path.abspath(args.preload), "FAULTLINE_REPORT_DIR": d,
           **(env_extra or {})}
    if runner:  # (qemu-user keeps a pipe of its own in the program's descriptor table)
        env["PLAIN_KEEP_PIPES"] = "1"
    if runner:  # the emulator passes its own environment, not the guest's, unless told
        cmd = runner + [a for k, v in env.items() for a in ("-E", f"{k}={v}")]
        envp = dict(os.environ)
    else:
        cmd, envp = [], dict(os.environ, **env)
    envp.pop("FAULTLINE_SIGNALS", None)
    r = subprocess.run(cmd + [exe or args.plain, *prog], capture_output=True, text=True,
                       timeout=120, env=envp)
    names = os.listdir(d) if os.path.isdir(d) else []  # (a program may remove it)
    return r, sorted(os.path.join(d, f) for f in names if f.endswith(".flr"))


def signature(d):
    """triage's signature for the reports in directory d ("" for none)."""
    tri = run([args.faultline, "triage", "--json", d]).stdout
    return json.loads(tri)[0]["signature"] if tri.strip() else ""


def raised_in_handler(mode, handler, how):
    """Runs plain `mode`, whose SIGSEGV handler `handler` raises the signal again at once: it
    dies of SIGSEGV with one report, of the raised signal, taken in the handler, whose stack
    crosses the signal frame into fault(). The report's directory, or None."""
    r, rep = preloaded(mode, mode)
    if not check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
                 f"{mode} ({how}): died of SIGSEGV ({r.returncode}) with one report ({len(rep)})"):
        return None
    fr = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)["threads"][0]["frames"]
    syms = [f["symbol"] for f in fr]
    check(handler in syms and "fault" in syms and syms.index(handler) < syms.index("fault") and
          any(f.get("signal_trampoline") for f in fr),
          f"{mode}: the handler, the signal frame, then fault() ({syms[:8]})")
    return os.path.dirname(rep[0])


def preloaded(name, *prog, env_extra=None, exe=None):
    """run_in a report directory of its own, workdir/name."""
    d = os.path.join(args.workdir, name)
    os.makedirs(d)
    return run_in(d, *prog, env_extra=env_extra, exe=exe)


lo, hi = nm_range(args.plain, "fault")
for mode, how in (("segv", "a fault"),
                  ("own-chain", "its own handler passes the signal on"),
                  ("own-dfl", "signal(SIG_DFL) and raise in its own handler"),
                  ("own-dfl-iso", "ISO C signal(SIG_DFL) and raise in its own handler"),
                  ("own-dfl-bsd", "bsd_signal(SIG_DFL) and raise in its own handler"),
                  ("own-dfl-sysv", "sysv_signal(SIG_DFL) and raise in its own handler"),
                  ("own-resethand", "a one-shot handler (SA_RESETHAND) that raises again"),
                  ("reset-dfl", "sigaction(SIG_DFL) at start")):
    r, rep = preloaded(mode, mode)
    if check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
             f"{mode} ({how}): died of SIGSEGV ({r.returncode}) with one report ({len(rep)})"):
        doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
        pc0 = crashed_pc0(doc)
        check(pc0 is not None and lo <= pc0 < hi and doc["signal"]["number"] == signal.SIGSEGV,
              f"{mode}: SIGSEGV, frame 0 in fault() per nm ({pc0})")
        # A handler without SA_SIGINFO gets no siginfo in its frame: whatever lies there must not
        # become the fault it was handling (only the true one, checked against the context).
        isig = doc.get("interrupted_signal")
        check(isig is None or (isig["name"] == "SIGSEGV" and isig["address"] == "0x10"),
              f"{mode}: no wrong interrupted signal ({isig})")
    if mode == "own-resethand":
        check(r.stdout == "reads back as set\n",
              f"own-resethand: sigaction reads the one-shot action back as set ({r.stdout!r})")
# vim's way: its handler, set with System V's sigset, puts SIG_DFL back with sigset (which also
# unblocks the signal) and sends the signal to the process with kill: the report is of that
# signal, taken in the handler, whose stack crosses the signal frame into the fault.
d2 = raised_in_handler("own-sigset", "dfl_sigset",
                       "sigset(SIG_DFL) and kill in a handler set with sigset, as vim")
if d2:
    sig = signature(d2)
    check(sig.startswith("fault | main"), f"own-sigset: the signature starts at the fault the "
          f"handler raised again ({sig!r})")
# ISO C's signal (glibc's __sysv_signal: SA_RESETHAND | SA_NODEFER), whose handler raises
# again at once: the report is of that signal, in the handler, across the signal frame.
raised_in_handler("own-iso-raise", "raise_again", "a one-shot ISO C handler that raises again")
check(r.stdout == "SIG_DFL read back\n",
      f"reset-dfl: sigaction and signal read SIG_DFL back ({r.stdout.strip()!r})")

# The program closes every descriptor above 2 (a daemon's closefrom), then perhaps opens a
# directory and a file of its own under the numbers the library held: the report is still
# written, in the report directory, and nothing of the program's is written to or closed.
# Natively also with the pipe reader, whose two descriptors the program takes too: it must not
# write memory into the program's file.
decoy_dir = os.path.join(args.workdir, "decoy-dir")
decoy_file = os.path.join(args.workdir, "decoy-file")
os.makedirs(decoy_dir)
open(decoy_file, "w").close()
cases = [("fds-closed", (), None), ("fds-reused", (decoy_dir, decoy_file), None)]
if not runner:
    cases += [("fds-closed-pipe", (), "fds-closed"),
              ("fds-reused-pipe", (decoy_dir, decoy_file), "fds-reused")]
for mode, extra, plain_mode in cases:
    r, rep = preloaded(mode, plain_mode or mode, *extra,
                       env_extra={"FAULTLINE_MEMORY_METHOD": "pipe"} if plain_mode else None)
    if check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
             f"{mode}: died of SIGSEGV ({r.returncode}) with one report ({len(rep)}) "
             f"{r.stderr.strip()[-200:]!r}"):
        doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
        pc0 = crashed_pc0(doc)
        check(pc0 is not None and lo <= pc0 < hi, f"{mode}: frame 0 in fault() per nm ({pc0})")
        check(any("opened again by its path" in n for n in doc.get("notes", [])),
              f"{mode}: the report notes the directory was opened again ({doc.get('notes')})")
check(os.listdir(decoy_dir) == [] and os.path.getsize(decoy_file) == 0,
      "fds-reused: the program's directory and file under the old numbers are untouched "
      f"({os.listdir(decoy_dir)}, {os.path.getsize(decoy_file)} bytes)")

# The report directory is deleted while the program runs (a cleaner of /tmp or of the user's
# state), and perhaps made again: the report goes to the directory the path names, made again
# if need be, and says so. One made again by another user is not trusted with the report.
for how in ("gone", "again") + (("foreign",) if os.geteuid() == 0 else ()):
    d = os.path.join(args.workdir, "dir-deleted-" + how)
    r, rep = preloaded("dir-deleted-" + how, "dir-deleted", d, how)
    if how == "foreign":
        check(r.returncode == -signal.SIGSEGV and rep == [] and "cannot create" in r.stderr,
              f"dir-deleted foreign: died of SIGSEGV ({r.returncode}), no report in the other "
              f"user's directory ({rep}), said so ({r.stderr.strip()[-200:]!r})")
        continue
    if check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
             f"dir-deleted {how}: died of SIGSEGV ({r.returncode}) with one report ({len(rep)}) "
             f"{r.stderr.strip()[-200:]!r}"):
        doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
        pc0 = crashed_pc0(doc)
        check(pc0 is not None and lo <= pc0 < hi and
              any("had been deleted" in n for n in doc.get("notes", [])) and
              (how != "gone" or (os.stat(d).st_mode & 0o777) == 0o700),
              f"dir-deleted {how}: frame 0 in fault() per nm ({pc0}), the report notes the "
              f"deletion ({doc.get('notes')}), made 0700 ({oct(os.stat(d).st_mode)})")

# A worker thread of the kernel's in the process (io_uring's submission thread): it runs none of
# the program's code and has no user-space stack; the report says so rather than that its
# system call's pc lies in no image.
r, rep = preloaded("uring", "uring")
if r.returncode == 3:
    print("SKIPPED: uring: io_uring cannot be set up here")
elif check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
           f"uring: died of SIGSEGV ({r.returncode}) with one report ({len(rep)})"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    iou = [t for t in doc["threads"] if (t.get("name") or "").startswith("iou-")]
    check(iou and all("kernel" in (t.get("unwind_stop") or "") and "io_uring" in t["unwind_stop"]
                      for t in iou),
          f"uring: the kernel's io_uring thread is named as such "
          f"({[(t.get('name'), t.get('unwind_stop')) for t in iou]})")

# The program as a PID namespace's init (a container's program started without an init): the
# kernel never sends it a signal whose action is the default, so SIGSEGV and SIGABRT sent by
# another process change nothing without faultline; with it they must not either (no report,
# the program goes on), and a real fault afterwards still gets its report (before: a report of a
# crash that did not happen, the actions restored, and the real fault's report lost).
if not runner:
    d = os.path.join(args.workdir, "pid1")
    os.makedirs(d)
    probe = subprocess.run(["unshare", "-p", "-f", "true"], capture_output=True, text=True) \
        if shutil.which("unshare") else None
    if not probe or probe.returncode != 0:
        print(f"SKIPPED: pid1: cannot make a PID namespace "
              f"({probe.stderr.strip() if probe else 'no unshare'})")
    else:
        # (env, so that unshare, which dies of its child's signal, is not preloaded itself)
        p = subprocess.Popen(["unshare", "-p", "-f", "env", f"LD_PRELOAD={os.path.abspath(args.preload)}",
                              f"FAULTLINE_REPORT_DIR={d}", args.plain, "lines"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        ready = p.stdout.readline()
        kids = run(["pgrep", "-P", str(p.pid)], check_rc=False).stdout.split()
        echoed = ""
        if ready == "ready\n" and kids:
            for sig in (signal.SIGSEGV, signal.SIGABRT):
                os.kill(int(kids[0]), sig)
            time.sleep(0.3)
            p.stdin.write("still here\n")
            p.stdin.flush()
            echoed = p.stdout.readline()
            quiet = os.listdir(d)
            p.stdin.write("segv\n")
            p.stdin.flush()
        else:
            quiet = None
        out, err = p.communicate(timeout=120)
        rep = [f for f in os.listdir(d) if f.endswith(".flr")]
        check(ready == "ready\n" and echoed == "still here\n" and quiet == [] and len(rep) == 1 and
              p.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV),
              f"pid1: sent SIGSEGV and SIGABRT change nothing ({echoed!r}, reports then: {quiet}); "
              f"the fault after them is reported ({len(rep)}, {p.returncode}, {err[-200:]!r})")
        if len(rep) == 1:
            doc = json.loads(run([args.faultline, "show", "--json", os.path.join(d, rep[0])]).stdout)
            pc0 = crashed_pc0(doc)
            check(doc["process"]["pid"] == 1 and doc["signal"]["name"] == "SIGSEGV" and
                  pc0 is not None and lo <= pc0 < hi,
                  f"pid1: the report is the fault's, in fault() per nm, by pid 1 ({doc['process']['pid']}, "
                  f"{doc['signal']['name']}, {pc0})")

# No /proc (a chroot or container without it; here a private mount namespace with /proc
# unmounted, as root): still a report, the executable named as it was started (AT_EXECFN, here
# relative to where it started), the missing thread list and maps noted.
if not runner:
    d = os.path.join(args.workdir, "no-proc")
    os.makedirs(d)
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "umount", "-l", "/proc"],
                           capture_output=True, text=True) if shutil.which("unshare") else None
    if not probe or probe.returncode != 0:
        print(f"SKIPPED: no-proc: cannot unmount /proc in a private mount namespace "
              f"({probe.stderr.strip() if probe else 'no unshare'})")
    else:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'umount -l /proc && exec "$0" threads', "./" + os.path.basename(args.plain)],
                           cwd=os.path.dirname(os.path.abspath(args.plain)), capture_output=True,
                           text=True, timeout=120,
                           env=dict(os.environ, LD_PRELOAD=os.path.abspath(args.preload),
                                    FAULTLINE_REPORT_DIR=d))
        rep = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".flr"))
        if check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
                 f"no-proc: died of SIGSEGV ({r.returncode}) with one report ({len(rep)}) "
                 f"{r.stderr.strip()[-200:]!r}"):
            doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
            name = "./" + os.path.basename(args.plain)
            main = [i for i in doc["images"] if i.get("is_main")]
            framed = [t for t in doc["threads"] if t["frames"] and t["state"] == "captured"]
            check(doc["process"]["path"] == name and len(main) == 1 and main[0]["path"] == name and
                  len(framed) >= 4 and
                  any("threads listed are the main thread and those faultline saw start" in n
                      for n in doc.get("notes", [])),
                  f"no-proc: the executable named {name!r} ({doc['process']['path']!r}, "
                  f"{[i['path'] for i in main]}), the threads faultline started captured "
                  f"({len(framed)} of {len(doc['threads'])}), where the list came from noted "
                  f"({doc.get('notes')})")

# A capture that blocks (as on a report directory whose file system stopped answering; here the
# FAULTLINE_TEST_HANG_AFTER hook, an hour's sleep after the signal is written): the crash
# deadline (FAULTLINE_CRASH_DEADLINE_MS, 1 s here) ends the process with SIGKILL.
t0 = time.monotonic()
r, rep = preloaded("deadline", "segv", env_extra={"FAULTLINE_CRASH_DEADLINE_MS": "1000",
                                                  "FAULTLINE_TEST_HANG_AFTER": "1"})
took = time.monotonic() - t0
check(r.returncode == -signal.SIGKILL and 0.9 < took < 60,
      f"deadline: a blocked capture ends in SIGKILL ({r.returncode}) after the deadline "
      f"({took:.1f} s; 1 s asked)")

# The server idiom: every signal blocked in every thread, one thread in sigwait for all of
# them. A fault's signal is never blocked (the kernel would kill the process without running a
# handler: no report), and faultline's capture signal is neither blocked nor waited for (the
# sigwait took it as its own and the program exited 0 mid-capture); the program's own signals
# still come to its sigwait.
r, rep = preloaded("block-all", "block-all")
if check(r.returncode == -signal.SIGSEGV and len(rep) == 1 and
         r.stdout.startswith("SEGV blocked 0, USR1 blocked 1\n") and "sigwait" not in r.stdout,
         f"block-all: died of SIGSEGV ({r.returncode}) with one report ({len(rep)}), the mask as "
         f"asked but SEGV ({r.stdout.strip()!r})"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    pc0 = crashed_pc0(doc)
    # (under qemu-user the process has a thread of the emulator's too)
    main = [t for t in doc["threads"] if t["tid"] == doc["process"]["pid"]]
    check(pc0 is not None and lo <= pc0 < hi and len(main) == 1 and main[0].get("frames") and
          main[0]["state"] == "captured",
          f"block-all: frame 0 in fault() per nm ({pc0}), the main thread (in sigwait) captured "
          f"and walked ({[(t['tid'], t.get('state'), len(t.get('frames', []))) for t in doc['threads']]})")
r, rep = preloaded("block-all-usr1", "block-all-usr1")
check(r.returncode == 0 and r.stdout.endswith(f"sigwait: {int(signal.SIGUSR1)}\n") and not rep,
      f"block-all-usr1: the program's sigwait still gets its SIGUSR1 ({r.returncode}, "
      f"{r.stdout.strip()!r})")

# A crash loop whose reports nobody takes: no report once the directory holds
# FAULTLINE_MAX_REPORTS (here 2) of them, or by default 256; the first are kept, stderr says so.
d = os.path.join(args.workdir, "max-reports")
os.makedirs(d)
for i in range(3):
    r, rep = run_in(d, "segv", env_extra={"FAULTLINE_MAX_REPORTS": "2"})
    said = f"no crash report written: {d} already holds 2 reports" in r.stderr
    check(r.returncode == -signal.SIGSEGV and len(rep) == min(i + 1, 2) and said == (i == 2),
          f"max-reports, crash {i + 1} of 3: died of SIGSEGV ({r.returncode}), "
          f"{min(i + 1, 2)} reports ({len(rep)}), the limit said only at the third "
          f"({r.stderr.strip()[-200:]!r})")
d = os.path.join(args.workdir, "max-reports-default")
os.makedirs(d)
for i in range(255):
    open(os.path.join(d, f"faultline-{i:032x}.flr"), "w").close()
r, rep = run_in(d, "segv")
r2, rep2 = run_in(d, "segv")
check(r.returncode == r2.returncode == -signal.SIGSEGV and len(rep) == len(rep2) == 256 and
      "already holds 256 reports" in r2.stderr,
      f"max-reports-default: the 256th report written ({len(rep)}), not the 257th ({len(rep2)}), "
      f"said ({r2.stderr.strip()[-200:]!r})")

# A program that gives up root after start can no longer write in the 0700 report directory
# root made: no report, but stderr says why, in words.
if os.geteuid() == 0:
    r, rep = preloaded("drop-user", "drop-user")
    check(r.returncode == -signal.SIGSEGV and rep == [] and
          "permission denied (EACCES); the process runs as user 65534" in r.stderr,
          f"drop-user: died of SIGSEGV ({r.returncode}), stderr says why there is no report "
          f"({r.stderr.strip()[-300:]!r})")

# No FAULTLINE_REPORT_DIR, HOME or XDG_STATE_HOME (a daemon): reports go to
# $TMPDIR/faultline-UID/faultline/reports, faultline-UID made 0700; not if another user could
# have made it first or can write to it (a name anyone can predict, in a directory anyone can
# write to).
if not runner:
    uid = os.getuid()
    for how in ("fresh", "open"):
        tmp = os.path.join(args.workdir, "tmpdir-" + how)
        top = os.path.join(tmp, f"faultline-{uid}")
        os.makedirs(tmp)
        if how == "open":
            os.makedirs(top)
            os.chmod(top, 0o777)
        envp = {k: v for k, v in os.environ.items()
                if k not in ("HOME", "XDG_STATE_HOME", "FAULTLINE_REPORT_DIR", "FAULTLINE_SIGNALS")}
        envp.update(LD_PRELOAD=os.path.abspath(args.preload), TMPDIR=tmp)
        r = subprocess.run([args.plain, "segv"], capture_output=True, text=True, timeout=120,
                           env=envp)
        d = os.path.join(top, "faultline", "reports")
        rep = [f for f in os.listdir(d) if f.endswith(".flr")] if os.path.isdir(d) else []
        if how == "fresh":
            check(r.returncode == -signal.SIGSEGV and len(rep) == 1 and
                  (os.stat(top).st_mode & 0o777) == 0o700,
                  f"default directory: died of SIGSEGV ({r.returncode}), one report in {d} "
                  f"({len(rep)}), {top} made 0700 ({oct(os.stat(top).st_mode)}) "
                  f"{r.stderr.strip()[-200:]!r}")
        else:
            check(r.returncode == -signal.SIGSEGV and rep == [] and
                  f"not using {top} for reports" in r.stderr and "not installed" in r.stderr,
                  f"default directory open to others: died of SIGSEGV ({r.returncode}), no "
                  f"report ({rep}), said why ({r.stderr.strip()[-300:]!r})")

# The program's own small alternate stack (8 KiB) in place of the library's, and a stack
# overflow: the capture runs on a stack of the library's, so the report is whole.
r, rep = preloaded("small-altstack", "small-altstack")
if check(r.returncode == -signal.SIGSEGV and len(rep) == 1 and "faulted" not in r.stderr,
         f"small-altstack: died of SIGSEGV ({r.returncode}) with one report ({len(rep)}), the "
         f"handler did not fault ({r.stderr.strip()[-200:]!r})"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    rlo, rhi = nm_range(args.plain, "recurse")
    pc0 = crashed_pc0(doc)
    check(doc["complete"] and pc0 is not None and rlo <= pc0 < rhi,
          f"small-altstack: a complete report ({doc['complete']}), frame 0 in recurse() per nm "
          f"({pc0})")

# A file size limit (RLIMIT_FSIZE, 1 KiB) that the report meets: the write fails, the report is
# kept cut short, and the process still dies of its own signal, not of SIGXFSZ.
r, rep = preloaded("fsize-limit", "fsize-limit")
check(r.returncode == -signal.SIGSEGV and len(rep) == 1 and "incomplete" in r.stderr,
      f"fsize-limit: died of SIGSEGV, not SIGXFSZ ({r.returncode}), one report ({len(rep)}) "
      f"said to be incomplete ({r.stderr.strip()[-200:]!r})")

# The main thread ends with pthread_exit and another thread faults: /proc/self is the exited
# main thread's (no maps, no exe link) and process_vm_readv finds no memory through its id.
r, rep = preloaded("main-exits", "main-exits")
if check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
         f"main-exits: died of SIGSEGV ({r.returncode}) with one report ({len(rep)})"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    pc0 = crashed_pc0(doc)
    main = [t for t in doc["threads"] if t["tid"] == doc["process"]["pid"]]
    check(pc0 is not None and lo <= pc0 < hi and not doc.get("notes") and
          doc["process"]["path"] == os.path.realpath(args.plain) and
          len(main) == 1 and main[0]["state"] == "exited",
          f"main-exits: frame 0 in fault() per nm ({pc0}), no notes ({doc.get('notes')}), the "
          f"program's path ({doc['process']['path']}), the main thread listed as exited "
          f"({[t['state'] for t in main]})")

# A seccomp filter that kills the process (or fails the call) on process_vm_readv, the safe
# reader's first choice: installed after the library, or before it (then exec). The reader keeps
# to write and read under any filter; the process dies of its own signal with a whole report.
# (Not under qemu-user, which has no seccomp for its guest.)
for mode in () if runner else ("seccomp-kill", "seccomp-errno", "seccomp-exec"):
    r, rep = preloaded(mode, mode)
    if check(r.returncode == -signal.SIGSEGV and len(rep) == 1,
             f"{mode}: died of SIGSEGV, not SIGSYS ({r.returncode}), with one report "
             f"({len(rep)})"):
        doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
        pc0 = crashed_pc0(doc)
        check(pc0 is not None and lo <= pc0 < hi and not doc.get("notes"),
              f"{mode}: frame 0 in fault() per nm ({pc0}), no notes ({doc.get('notes')})")

# Started with stdin, stdout and stderr closed: the library's descriptors stay above 2, so the
# program's own next open gets 0, as it would without the library (daemons count on that); a
# crash is still reported. (Not under qemu-user, whose own descriptors take those numbers.)
if not runner:
    d = os.path.join(args.workdir, "std-closed")
    os.makedirs(d)
    envp = dict(os.environ, LD_PRELOAD=os.path.abspath(args.preload), FAULTLINE_REPORT_DIR=d)
    envp.pop("FAULTLINE_SIGNALS", None)

    def close_std():
        for fd in (0, 1, 2):
            os.close(fd)
    r1 = subprocess.run([args.plain, "lowest-fd"], env=envp, preexec_fn=close_std, timeout=120)
    r2 = subprocess.run([args.plain, "segv"], env=envp, preexec_fn=close_std, timeout=120)
    rep = [f for f in os.listdir(d) if f.endswith(".flr")]
    check(r1.returncode == 0 and r2.returncode == -signal.SIGSEGV and len(rep) == 1,
          f"stdin, stdout and stderr closed: the program's first open gets 0 ({r1.returncode}), "
          f"a fault still dies of SIGSEGV ({r2.returncode}) with one report ({len(rep)})")

r, rep = preloaded("own-dfl-raw", "own-dfl-raw")
check(r.returncode == -signal.SIGSEGV and not rep,
      f"own-dfl-raw (SIG_DFL by the system call, past libc): died of SIGSEGV ({r.returncode}), "
      f"no report ({len(rep)})")
# A handler of the program's that chains, as the JVM's does, to the action it found before its
# own, and otherwise writes its own crash log and aborts: asked, the library says SIG_DFL (what
# it replaced), so the program's own crash handling runs (before, the JVM's hs_err file was
# lost: it called ours, which ended the process); its abort is reported, and the report says
# which fault the handler was handling, in which frame (nm), where the signature starts.
r, rep = preloaded("own-runtime", "own-runtime")
if check(r.returncode == -signal.SIGABRT and "plain: own crash log" in r.stderr and len(rep) == 1,
         f"own-runtime: its own crash log ({r.stderr.strip()[-200:]!r}), died of SIGABRT "
         f"({r.returncode}) with one report ({len(rep)})"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    isig, fr = doc.get("interrupted_signal") or {}, doc["threads"][0]["frames"]
    k = isig.get("frame", 0)
    main_img = next(i for i in doc["images"] if i["is_main"])
    pck = int(fr[k]["pc"], 16) - int(main_img["slide"], 16) if 0 < k < len(fr) else None
    check(doc["signal"]["name"] == "SIGABRT" and isig.get("name") == "SIGSEGV" and
          isig.get("code_name") == "SEGV_MAPERR" and isig.get("address") == "0x10" and
          pck is not None and lo <= pck < hi and fr[k - 1].get("signal_trampoline"),
          f"own-runtime: SIGABRT while handling SIGSEGV at 0x10 in fault() per nm "
          f"({doc['signal']['name']}, {isig}, frame pc {pck})")
    sig = signature(os.path.dirname(rep[0]))
    check(sig.startswith("fault | main"), f"own-runtime: the signature starts at the fault ({sig!r})")
    ev = json.loads(run([args.faultline, "show", "--format", "sentry", rep[0]]).stdout)
    val = ev["exception"]["values"][0]["value"]
    check(f"while handling SIGSEGV (SEGV_MAPERR) at 0x0000000000000010, in frame {k}" in val,
          f"own-runtime: the Sentry event's exception says so ({val!r})")
r, rep = preloaded("own-recover", "own-recover")
check(r.returncode == 0 and r.stdout == "recovered\n" and not rep,
      f"own-recover: the program goes on ({r.returncode}, {r.stdout!r}), no report")
r, rep = preloaded("abort", "abort")
if check(r.returncode == -signal.SIGABRT and len(rep) == 1,
         f"abort: died of SIGABRT ({r.returncode}) with one report ({len(rep)})"):
    # show's Crash Site: past abort's frames, the caller of abort (main, per nm)
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    mlo, mhi = nm_range(args.plain, "main")
    slide = int(next(i for i in doc["images"] if i["is_main"])["slide"], 16)
    k = next((i for i, f in enumerate(doc["threads"][0]["frames"])
              if i > 0 and mlo <= int(f["pc"], 16) - slide - 1 < mhi), -1)
    site = crash_site(args.faultline, rep[0])
    named = k > 0 and doc["threads"][0]["frames"][k - 1].get("symbol")
    if not named:  # (under qemu the host CLI has no symbols for the guest's libc: no machinery)
        print(f"SKIPPED: abort: Crash Site: abort's frames have no names here ({site!r})")
    else:
        check(site.startswith(f"frame {k}, main + "),
              f"abort: show's Crash Site is abort's caller, main, frame {k} per nm ({site!r})")
# What glibc said as it aborted: the report's abort_message is the line glibc printed on stderr
# (the oracle), in every view; a plain abort() says nothing, and its report has none.
check(not json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)["abort_message"]
      if rep else False, "abort: no abort message for a plain abort()")
for mode, said in (("assert", r"^.*: Assertion `argc > 7 && \"the configuration names seven "
                              r"parts\"' failed\.$"),
                   ("double-free", r"^free\(\): double free detected in tcache 2$"),
                   ("fortify", r"^\*\*\* buffer overflow detected \*\*\*: terminated$")):
    r, rep = preloaded(mode, mode)
    if not check(r.returncode == -signal.SIGABRT and len(rep) == 1,
                 f"{mode}: died of SIGABRT ({r.returncode}) with one report ({len(rep)})"):
        continue
    line = next((ln for ln in r.stderr.splitlines() if re.match(said, ln)), None)
    msg = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)["abort_message"]
    if check(line is not None and msg == line,
             f"{mode}: the report's abort message is glibc's line on stderr ({msg!r}, {line!r})"):
        views = {f: run([args.faultline, "show", "--format", f, rep[0]]).stdout
                 for f in ("text", "apple", "tombstone")}
        check(f"Abort Message:       {line}\n" in views["text"] and
              f"Application Specific Information:\n{line}\n" in views["apple"] and
              f"Abort message: '{line}'\n" in views["tombstone"],
              f"{mode}: show, apple and tombstone views give it")
        val = json.loads(run([args.faultline, "show", "--format", "sentry", rep[0]]).stdout)[
            "exception"]["values"][0]["value"]
        check(val.endswith(": " + line), f"{mode}: the Sentry event's exception value ends with it "
                                         f"({val!r})")
        groups = json.loads(run([args.faultline, "triage", "--json", rep[0]]).stdout)
        check(groups and groups[0].get("reasons") == [line],
              f"{mode}: triage's group gives it as its reason ({groups[0].get('reasons')})")
# The C++ exception std::terminate was called with: its type is the one the C++ library names on
# stderr (the oracle: "terminate called after throwing an instance of 'T'"), in every view, and
# triage's signature starts at the throw; a handler of the program's own, set after the
# library's, is kept (and then no type is known); a plain abort has none.
if args.cxx:
    exe = os.path.join(args.workdir, "throw")
    cc = run([args.cxx, "-O1", "-g", "-o", exe,
              os.path.join(os.path.dirname(os.path.abspath(__file__)), "throw.cpp")])
    check(cc.returncode == 0, f"throw.cpp builds ({cc.stderr[-300:]!r})")
    for mode in ("uncaught", "noexcept", "own-handler", "abort"):
        r, rep = preloaded("throw-" + mode, mode, exe=exe)
        if not check(r.returncode == -signal.SIGABRT and len(rep) == 1,
                     f"throw {mode}: died of SIGABRT ({r.returncode}) with one report ({len(rep)})"):
            continue
        named = re.search(r"terminate called after throwing an instance of '([^']*)'", r.stderr)
        term = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)["terminate"]
        if mode in ("own-handler", "abort"):
            check(term is None, f"throw {mode}: no exception type ({term})")
            continue
        if not check(named is not None and term is not None and
                     term["type"] == named.group(1) == "app::config_error" and
                     term["mangled"] == "N3app12config_errorE",
                     f"throw {mode}: the type the C++ library named ({term}, "
                     f"{named.group(1) if named else None!r})"):
            continue
        text = run([args.faultline, "show", rep[0]]).stdout
        check("C++ Exception:       app::config_error\n" in text,
              f"throw {mode}: show's C++ Exception row")
        check("terminating due to uncaught exception of type app::config_error\n" in
              run([args.faultline, "show", "--format", "apple", rep[0]]).stdout and
              "Abort message: 'terminating due to uncaught exception of type app::config_error'"
              in run([args.faultline, "show", "--format", "tombstone", rep[0]]).stdout,
              f"throw {mode}: the Apple and tombstone views say it")
        groups = json.loads(run([args.faultline, "triage", "--json", rep[0]]).stdout)
        check(groups and groups[0].get("reasons") == ["C++ exception app::config_error"],
              f"throw {mode}: triage's reason ({groups[0].get('reasons') if groups else None})")
        if mode == "uncaught":
            site = crash_site(args.faultline, rep[0])
            check(site.split(", ", 1)[-1].startswith("parse_config("),
                  f"throw uncaught: the crash site is the throw, parse_config ({site!r})")
r, rep = preloaded("threads", "threads")
if check(r.returncode == -signal.SIGSEGV and len(rep) == 1, "threads: one report"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    framed = [t for t in doc["threads"] if t["frames"]]  # (qemu's own threads have none)
    check(len(framed) >= 4 and doc["threads"][0]["crashed"],
          f"threads: the crashed thread and 3 more, each with frames ({len(framed)})")

# A runtime that takes every signal (Go's): its handler for faultline's capture signal (the
# highest real-time signal that can be sent, SIGRTMAX natively) is the program's as far as it
# can tell, and gets the signals sent to it, while faultline's own requests still stop every
# thread of a crash (before: the crash's other threads were "not captured", the handler
# replaced).
r, rep = preloaded("take-all", "take-all")
if check(r.returncode == -signal.SIGSEGV and len(rep) == 1 and
         r.stdout == "reads back its own, got 2, value 7\n",
         f"take-all: the program's handler reads back and gets its kill and sigqueue "
         f"({r.stdout.strip()!r}), then one report ({r.returncode}, {len(rep)})"):
    doc = json.loads(run([args.faultline, "show", "--json", rep[0]]).stdout)
    framed = [t for t in doc["threads"] if t["frames"] and t["state"] == "captured"]
    notes = " ".join(doc.get("notes", []))
    check(len(framed) >= 4 and "capture signal" not in notes,
          f"take-all: the crashed thread and 3 more captured, with frames ({len(framed)}; "
          f"{notes!r})")
# SIG_DFL set by the program for that signal is the default action: the process ends of it.
r, rep = preloaded("rt-dfl", "rt-dfl")
sent = int(r.stdout.split()[1]) if r.stdout.startswith("signal ") else 0
# (qemu-user ends itself with the host signal it maps the guest's to: another number)
died = r.returncode == -sent or (runner and signal.SIGRTMIN <= -r.returncode <= signal.SIGRTMAX)
check(sent and died and not rep,
      f"rt-dfl: ignored, then SIG_DFL, then the signal ({r.stdout.strip()!r}): the process "
      f"dies of it ({r.returncode}), no report")
finish()
