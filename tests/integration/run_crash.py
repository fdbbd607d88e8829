#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Runs one crash scenario in a child process (or --repeat N of them) and checks the decoded report.
import argparse, fnmatch, glob, json, os, shutil, signal, subprocess, sys, tempfile, time

p = argparse.ArgumentParser()
p.add_argument("--crasher", required=True)
p.add_argument("--cli", required=True)
p.add_argument("--scenario", required=True)
p.add_argument("--signal", required=True, help="expected signal name, e.g. SIGSEGV")
p.add_argument("--frames", required=True, help="comma-separated functions expected in order")
p.add_argument("--protoc")
p.add_argument("--proto-dir")
p.add_argument("--env", action="append", default=[])
p.add_argument("--stdout-contains")
p.add_argument("--note-contains", action="append", default=[], metavar="TEXT",
               help="a note of the report contains TEXT")
p.add_argument("--expect-stderr", action="append", default=[], metavar="TEXT",
               help="stderr must contain TEXT ({dir} stands for the report directory)")
p.add_argument("--other-thread", action="store_true", help="the crash is on a non-main thread")
p.add_argument("--outermost", metavar="F1,F2",
               help="a stack deeper than max_frames: frames were omitted, and the outermost kept "
                    "ones hold these functions in order")
p.add_argument("--pc-zero", action="store_true", help="frame 0 pc must be 0")
p.add_argument("--expect-truncated", action="store_true",
               help="the report must say it is incomplete; only its prefix is checked")
p.add_argument("--expect-no-report", action="store_true",
               help="no report can be written: check only the death, the time and stderr")
p.add_argument("--expect-exit", type=int,
               help="the crasher must exit with this status instead (the heap interposer's 77)")
p.add_argument("--expect-core", action="store_true",
               help="with core dumps enabled, the kernel must still dump core (skipped where "
                    "core_pattern pipes cores to a helper)")
p.add_argument("--report-dir-setup", choices=["tmpfs-readonly", "tmpfs-full", "tmpfs-full-0"],
               help="run in a private mount namespace (unshare -m) with the report directory on "
                    "a small tmpfs: the crasher remounts it read-only, or it has one page (full) "
                    "or nothing (full-0) left")
p.add_argument("--timeout", type=float, default=60, help="seconds the crasher may take")
p.add_argument("--repeat", type=int, default=1, help="run and check this many times")
# Assertions on the thread list (all-thread capture). NAME is a thread name or a glob.
p.add_argument("--min-threads", type=int, help="at least N threads listed in the report")
p.add_argument("--min-threads-total", type=int, help="threads_total is at least N")
p.add_argument("--thread-state", action="append", default=[], metavar="NAME=STATE",
               help="the threads named NAME (at least one) all have this state")
p.add_argument("--thread-frames", action="append", default=[], metavar="NAME=f1,f2",
               help="the threads named NAME (at least one) all have these functions in order")
p.add_argument("--all-captured-except", metavar="NAME,...",
               help="every thread not named here has the state 'captured' ('' for none)")
p.add_argument("--runner", default="", help="prefix command (e.g. qemu-aarch64 -L ...)")
p.add_argument("--symbols", action="append", default=[], metavar="DIR",
               help="passed to faultline show (where an emulated guest's libraries are)")
p.add_argument("--frame-method", action="append", default=[], metavar="INDEX=METHOD",
               help="the crashed thread's frame INDEX was found by METHOD (cfi, link_register, ...)")
p.add_argument("--frame-pc", action="append", default=[], metavar="INDEX=ANNOTATION",
               help="the crashed thread's frame INDEX has the pc the crasher gave as annotation "
                    "ANNOTATION, in no image (code a JIT wrote)")
p.add_argument("--child-reports", type=int, default=0, metavar="N",
               help="N more reports, each by a child process (another pid) whose crashed thread "
                    "has --child-frame; the crasher's own is checked as usual")
p.add_argument("--child-frame", help="a function in each child report's crashed thread")
p.add_argument("--static", action="store_true",
               help="the crasher is linked statically: no shared libc among the images")
p.add_argument("--compare-engines", choices=["all", "crashed"],
               help="run the scenario again with LLVM libunwind as the CFI engine "
                    "(FAULTLINE_CFI=llvm) and require the same frames (image, image offset, sp "
                    "from frame 0's, method) for every captured thread, or the crashed one")
a = p.parse_args()
a.last_doc = None

passed = failed = 0
def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr)
    return cond

def finish():
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)

class Stop(Exception):
    """Nothing more of this run can be checked."""

sig = getattr(signal, a.signal)
want = a.frames.split(",")
IN_NS = "FL_RUN_CRASH_IN_NAMESPACE"

def symbols(thread):
    # GCC's split-off parts (main.cold, f.part.0) count as the function itself.
    return [(f["symbol"] or "").split(".")[0] for f in thread["frames"]]

def in_order(syms, names):
    pos = -1
    for w in names:
        try:
            pos = syms.index(w, pos + 1)
        except ValueError:
            return False
    return True

def named(doc, pattern):
    return [t for t in doc["threads"] if fnmatch.fnmatchcase(t["name"] or "", pattern)]

def emulator_thread(t):
    """qemu-user's own threads (its RCU thread) block every signal and carry its name: under a
    runner they are listed as blocked, and are not the application's."""
    return a.runner and t["state"] == "blocked" and t["name"] == os.path.basename(a.runner.split()[0])

def split_kv(s):
    k, _, v = s.partition("=")
    return k, v

def check_threads(doc):
    threads = doc["threads"]
    if a.min_threads is not None:
        check(len(threads) >= a.min_threads, f"{len(threads)} threads listed, expected >= {a.min_threads}")
    if a.min_threads_total is not None:
        total = doc.get("threads_total") or 0
        check(total >= a.min_threads_total, f"threads_total {total}, expected >= {a.min_threads_total}")
    for spec in a.thread_state:
        name, state = split_kv(spec)
        ts = named(doc, name)
        check(ts and all(t["state"] == state for t in ts),
              f"threads named {name!r}: states {[t['state'] for t in ts]}, expected {state}")
    for spec in a.thread_frames:
        name, funcs = split_kv(spec)
        ts = named(doc, name)
        bad = [(t["tid"], symbols(t)) for t in ts if not in_order(symbols(t), funcs.split(","))]
        check(ts and not bad, f"threads named {name!r} lack frames {funcs} in order: {ts and bad[:3]}")
    # A thread that blocked the capture signal and has frames was read from its system call.
    for t in threads:
        if t["state"] == "blocked" and t["frames"]:
            check(t["frames"][0]["method"] == "syscall" and
                  all(f["method"] != "context" for f in t["frames"]),
                  f"blocked thread {t['name']}: frame 0 from its system call")
    if a.all_captured_except is not None:
        skip = [n for n in a.all_captured_except.split(",") if n]
        bad = [(t["name"], t["state"]) for t in threads
               if t["state"] != "captured" and not emulator_thread(t)
               and not any(fnmatch.fnmatchcase(t["name"] or "", n) for n in skip)]
        check(not bad, f"threads not captured: {bad[:10]}")

def symbols_args():
    return [x for d in a.symbols for x in ("--symbols", d)]

def frames_by_thread(doc):
    """Each captured thread's frames as (image, pc - slide, sp - frame 0's sp, method): what two
    runs of the same program have in common whatever the address-space layout. Threads are
    grouped by name (and crashed or not); a group's frame lists are sorted."""
    imgs = doc["images"]
    groups = {}
    for t in doc["threads"]:
        if t["state"] != "captured" or (a.compare_engines == "crashed" and not t["crashed"]):
            continue
        frames = t["frames"]
        sp0 = int(frames[0]["sp"], 16) if frames else 0
        norm = []
        for f in frames:
            img = imgs[f["image"]] if f.get("image") is not None else None
            base = int(img["slide"], 16) if img else 0
            norm.append((os.path.basename(img["path"]) if img else "?", int(f["pc"], 16) - base,
                         int(f["sp"], 16) - sp0, f["method"]))
        groups.setdefault((t["name"], t["crashed"]), []).append(tuple(norm))
    return {k: sorted(v) for k, v in groups.items()}

def compare_engines(doc, doc_llvm):
    ours, theirs = frames_by_thread(doc), frames_by_thread(doc_llvm)
    check(ours.keys() == theirs.keys(),
          f"threads differ between the engines: {sorted(ours.keys() ^ theirs.keys())[:10]}")
    n = 0
    for k in sorted(ours.keys() & theirs.keys()):
        for x, y in zip(ours[k], theirs[k]):
            n += len(x)
            if x != y:
                check(False, f"thread {k}: the frames differ between faultline's CFI engine and LLVM libunwind")
                for i in range(max(len(x), len(y))):
                    fx = x[i] if i < len(x) else None
                    fy = y[i] if i < len(y) else None
                    print(f"  {i:3} {'  ' if fx == fy else '!='} ours {fx}  llvm {fy}")
                return
        check(len(ours[k]) == len(theirs[k]), f"thread group {k}: counts differ")
    print(f"engines agree: {sum(len(v) for v in ours.values())} threads, {n} frames")

def check_report(report, rdir):
    st = os.stat(report)
    check(st.st_mode & 0o777 == 0o600, f"report mode {oct(st.st_mode & 0o777)}")
    check(os.stat(rdir).st_mode & 0o777 == 0o700, "report dir mode")
    js = subprocess.run([a.cli, "show", "--json"] + symbols_args() + [report], capture_output=True, text=True)
    check(js.returncode == 0, f"faultline show --json failed: {js.stderr}")
    try:
        doc = json.loads(js.stdout)
    except ValueError as e:
        check(False, f"faultline show --json printed invalid JSON ({e}): {js.stdout[:500]!r}")
        raise Stop
    check(doc["signal"]["name"] == a.signal, f"signal {doc['signal']}")
    for text in a.note_contains:
        check(any(text in n for n in doc["notes"]), f"a note contains {text!r}: {doc['notes']}")
    check(doc["signal"]["number"] == sig, "signal number")
    if a.expect_truncated:
        check(doc.get("truncated") and not doc.get("complete"), "report marked incomplete")
    else:
        check(doc.get("complete") and not doc.get("truncated"), "report complete")
    crashed = [t for t in doc["threads"] if t["crashed"]]
    check(len(crashed) == 1, "exactly one crashed thread")
    if crashed:
        t = crashed[0]
        check(t["tid"] == doc["crashed_tid"], "crashed tid matches signal block")
        if a.other_thread:
            check(t["tid"] != doc["process"]["pid"], "crash is on a non-main thread")
        syms = symbols(t)
        print("frames:", " | ".join(f"{f['pc']} {f['symbol']} [{f['method']}]" for f in t["frames"]))
        # Expected functions must appear in this order, the first one within the top 4 frames.
        check(in_order(syms, want), f"frames {syms} do not contain {want} in order")
        check(want[0] in syms[:4], f"{want[0]} not among the top frames {syms[:4]}")
        if a.pc_zero:
            check(t["frames"][0]["pc"] == "0x0", "frame 0 pc is 0")
        for spec in a.frame_method:
            i, method = split_kv(spec)
            got = t["frames"][int(i)]["method"] if int(i) < len(t["frames"]) else None
            check(got == method, f"frame {i} found by {got}, expected {method}")
        for spec in a.frame_pc:
            i, key = split_kv(spec)
            f = t["frames"][int(i)] if int(i) < len(t["frames"]) else {}
            exp = doc["annotations"].get(key)
            check(exp and f.get("pc") == exp and f.get("image") is None,
                  f"frame {i}: pc {f.get('pc')} image {f.get('image')}, expected {exp} in no image")
            # Its name from the JIT's perf map, /tmp/perf-PID.map; never in the signature.
            name = doc["annotations"].get("jit_name")
            if name:
                check(f.get("symbol") == name, f"frame {i}: symbol {f.get('symbol')!r}, the perf "
                      f"map's {name!r}")
                tri = subprocess.run([a.cli, "triage", "--json", os.path.dirname(report)],
                                     capture_output=True, text=True).stdout
                signature = json.loads(tri)[0]["signature"] if tri.strip() else ""
                check(signature and "jit_thunk" not in signature, f"the perf map's name is not "
                      f"in the signature ({signature!r})")
        check(len(t["registers"]) >= 17, "general registers recorded")
        if a.outermost:
            at, n = t["frames_omitted_at"], t["frames_omitted"]
            check(n > 1000 and 0 < at < len(t["frames"]),
                  f"frames omitted between innermost and outermost ({n} at {at})")
            check(in_order(syms[at:], a.outermost.split(",")),
                  f"outermost frames {syms[at:]} hold {a.outermost}")
            check(all(s == want[0] for s in syms[1:at]), "the innermost frames are the recursion")
            text = subprocess.run([a.cli, "show", report], capture_output=True, text=True).stdout
            check(f"... {n} frames omitted ..." in text and f"\n{at + n} " in text,
                  "show: the gap, and the depths after it")
    check_threads(doc)
    a.last_doc = doc
    imgs = doc["images"]
    if a.expect_truncated and not imgs:
        return  # cut off before the images: what was written has been checked
    main = [i for i in imgs if i["is_main"]]
    check(len(main) == 1 and os.path.realpath(main[0]["path"]) == os.path.realpath(a.crasher),
          "main executable image")
    check(main and main[0]["build_id"], "main image has a build-id")
    check(any(i["is_vdso"] for i in imgs) or a.runner, "vdso image listed")
    check(a.static or any("libc.so" in i["path"] for i in imgs), "libc image listed")
    if not a.expect_truncated:  # annotations come last: a cut-off report may lack them
        check(doc["annotations"].get("scenario") == a.scenario, "annotation recorded")

def check_decoders(report):
    text = subprocess.run([a.cli, "show"] + symbols_args() + [report], capture_output=True, text=True)
    check(text.returncode == 0 and want[0] in text.stdout, "faultline show (text) names the crashing function")
    # protoc decodes whole messages only: a report cut by a full disk ends inside an item.
    if a.protoc and not (a.report_dir_setup or "").startswith("tmpfs-full"):
        with open(report, "rb") as f:
            d = subprocess.run([a.protoc, "--decode=faultline.Report", "-I", a.proto_dir, "faultline.proto"],
                               stdin=f, capture_output=True)
        check(d.returncode == 0 and b'magic: "faultline"' in d.stdout, f"protoc --decode failed: {d.stderr!r}")

def mount_tmpfs(rdir):
    os.mkdir(rdir, 0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "fl-test", rdir], check=True)

def fill_tmpfs(rdir, pages_left):
    # Fill it, then free whole pages again (tmpfs counts pages): with one, the report can write
    # its first 4096 bytes only.
    filler = os.path.join(rdir, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"x" * 4096) == 4096:
            pass
    except OSError:
        pass
    size = os.fstat(fd).st_size // 4096 * 4096
    os.ftruncate(fd, size - 4096 * pages_left)
    os.close(fd)
    vfs = os.statvfs(rdir)
    print(f"tmpfs-full: {vfs.f_bavail * vfs.f_frsize} bytes free")

def enable_core():
    if a.expect_core:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

def run_once(first):
    with tempfile.TemporaryDirectory(prefix="fl-crash-") as tmp:
        rdir = os.path.join(tmp, "reports")
        if a.report_dir_setup:
            mount_tmpfs(rdir)
        try:
            if a.report_dir_setup in ("tmpfs-full", "tmpfs-full-0"):
                fill_tmpfs(rdir, 0 if a.report_dir_setup == "tmpfs-full-0" else 1)
            run_in(tmp, rdir, first)
            if a.compare_engines and a.last_doc:
                doc, a.last_doc = a.last_doc, None
                rdir2 = os.path.join(tmp, "reports-llvm")
                run_in(tmp, rdir2, False, engine="llvm")
                if a.last_doc:
                    compare_engines(doc, a.last_doc)
        finally:
            if a.report_dir_setup:
                subprocess.run(["umount", "-l", rdir])

def run_in(tmp, rdir, first, engine=None):
    env = dict(os.environ)
    env.pop(IN_NS, None)
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    if engine:
        env["FAULTLINE_CFI"] = engine
    cmd = a.runner.split() + [a.crasher, a.scenario, rdir]
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=tmp, preexec_fn=enable_core)
    try:
        out, err = child.communicate(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        sys.stderr.write(err)
        check(False, f"crasher hung ({a.timeout:g} s)")
        raise Stop
    elapsed = time.monotonic() - t0
    a.pid = child.pid
    perf_map = f"/tmp/perf-{child.pid}.map"  # (the jit scenario's)
    if first:
        sys.stderr.write(err)
        print(f"crasher ran {elapsed:.3f} s")
    before = failed
    try:
        check_run(child.returncode, out, err, tmp, rdir, first)
    finally:
        if a.scenario == "jit" and os.path.exists(perf_map):
            os.unlink(perf_map)
        if not first and failed > before:
            sys.stderr.write(err)
            print(f"crasher ran {elapsed:.3f} s")

def check_run(returncode, out, err, tmp, rdir, first):
    if a.expect_exit is not None:
        check(returncode == a.expect_exit, f"exit status {returncode}, expected {a.expect_exit}")
        return
    if a.expect_core:  # qemu-user dumps the guest's core itself, as qemu_<program>_<time>.core
        cores = glob.glob(os.path.join(tmp, "core*")) + glob.glob(os.path.join(tmp, "qemu_*.core"))
        check(cores, "no core dump although core dumps were enabled")
    check(returncode == -sig, f"exit status {returncode}, expected death by {a.signal} ({-sig})")
    if a.stdout_contains:
        check(a.stdout_contains in out, f"stdout lacks {a.stdout_contains!r}: {out!r}")
    for text in a.expect_stderr:
        text = text.replace("{dir}", rdir)
        check(text in err, f"stderr lacks {text!r}")
    reports = glob.glob(os.path.join(rdir, "faultline-*.flr"))
    check(not glob.glob(os.path.join(rdir, ".tmp-*")), "temporary report left behind")
    if a.expect_no_report:
        check(not reports, f"expected no report, found {reports}")
        return
    if a.child_reports:
        own = []
        for rep in reports:
            d = json.loads(subprocess.run([a.cli, "show", "--json"] + symbols_args() + [rep],
                                          capture_output=True, text=True).stdout or "{}")
            if d.get("process", {}).get("pid") == a.pid:
                own.append(rep)
                continue
            t = [t for t in d.get("threads", []) if t["crashed"]]
            check(t and a.child_frame in symbols(t[0]),
                  f"a child's report: {a.child_frame} in {symbols(t[0]) if t else None}")
        check(len(reports) - len(own) == a.child_reports,
              f"{a.child_reports} child reports expected, found {len(reports) - len(own)}")
        reports = own
    check(len(reports) == 1, f"expected one report, found {reports}")
    if not reports:
        raise Stop
    check_report(reports[0], rdir)
    if first:  # the other decoders once: they cost more than the crash
        check_decoders(reports[0])

def enter_namespace():
    """Re-runs this script in a private mount namespace, or reports why it cannot."""
    why = None
    if not shutil.which("unshare") or not shutil.which("mount"):
        why = "unshare or mount not installed"
    else:
        d = tempfile.mkdtemp(prefix="fl-probe-")
        probe = subprocess.run(["unshare", "-m", "--propagation", "private",
                                "mount", "-t", "tmpfs", "-o", "size=4k", "fl-probe", d],
                               capture_output=True, text=True)
        os.rmdir(d)
        if probe.returncode != 0:
            why = f"cannot mount a tmpfs in a private mount namespace: {probe.stderr.strip()}"
    if why:
        print(f"SKIPPED: {why}")
        sys.exit(0)
    env = dict(os.environ, **{IN_NS: "1"})
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable] + sys.argv, env=env)
    sys.exit(r.returncode)

if a.expect_core:
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|") or "/" in pattern:
        print(f"core_pattern {pattern!r} does not write ./core: core check skipped")
        a.expect_core = False
if a.report_dir_setup and not os.environ.get(IN_NS):
    enter_namespace()

t0 = time.monotonic()
for i in range(a.repeat):
    try:
        run_once(i == 0)
    except Stop:
        pass
    if failed:
        if a.repeat > 1:
            print(f"run {i + 1} of {a.repeat} failed")
        break
if a.repeat > 1:
    print(f"{i + 1} runs in {time.monotonic() - t0:.1f} s")
finish()
