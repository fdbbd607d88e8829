#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Runs one crash scenario in a child process and checks the decoded report.
import argparse, glob, json, os, signal, subprocess, sys, tempfile

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
p.add_argument("--other-thread", action="store_true", help="the crash is on a non-main thread")
p.add_argument("--pc-zero", action="store_true", help="frame 0 pc must be 0")
p.add_argument("--expect-truncated", action="store_true",
               help="the handler was made to fault: the report must say it is incomplete")
p.add_argument("--expect-core", action="store_true",
               help="with core dumps enabled, the kernel must still dump core (skipped where "
                    "core_pattern pipes cores to a helper)")
p.add_argument("--runner", default="", help="prefix command (e.g. qemu-aarch64 -L ...)")
a = p.parse_args()

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

sig = getattr(signal, a.signal)
with tempfile.TemporaryDirectory(prefix="fl-crash-") as tmp:
    rdir = os.path.join(tmp, "reports")
    env = dict(os.environ)
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    cmd = a.runner.split() + [a.crasher, a.scenario, rdir]
    if a.expect_core:
        import resource
        pattern = open("/proc/sys/kernel/core_pattern").read().strip()
        if pattern.startswith("|") or "/" in pattern:
            print(f"core_pattern {pattern!r} does not write ./core: core check skipped")
            a.expect_core = False
    def enable_core():
        if a.expect_core:
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    try:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=tmp, preexec_fn=enable_core)
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "crasher hung (60 s)")
        finish()
    class R: pass
    r = R(); r.returncode, r.stdout, r.stderr = p.returncode, out, err
    if a.expect_core:
        cores = glob.glob(os.path.join(tmp, "core*"))
        check(cores, "no core dump although core dumps were enabled")
    sys.stderr.write(r.stderr)
    check(r.returncode == -sig, f"exit status {r.returncode}, expected death by {a.signal} ({-sig})")
    if a.stdout_contains:
        check(a.stdout_contains in r.stdout, f"stdout lacks {a.stdout_contains!r}: {r.stdout!r}")
    reports = glob.glob(os.path.join(rdir, "faultline-*.flr"))
    check(len(reports) == 1, f"expected one report, found {reports}")
    check(not glob.glob(os.path.join(rdir, ".tmp-*")), "temporary report left behind")
    if not reports:
        finish()
    report = reports[0]
    st = os.stat(report)
    check(st.st_mode & 0o777 == 0o600, f"report mode {oct(st.st_mode & 0o777)}")
    check(os.stat(rdir).st_mode & 0o777 == 0o700, "report dir mode")

    js = subprocess.run([a.cli, "show", "--json", report], capture_output=True, text=True)
    check(js.returncode == 0, f"faultline show --json failed: {js.stderr}")
    try:
        doc = json.loads(js.stdout)
    except ValueError as e:
        check(False, f"faultline show --json printed invalid JSON ({e}): {js.stdout[:500]!r}")
        finish()
    check(doc["signal"]["name"] == a.signal, f"signal {doc['signal']}")
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
        pid = doc["process"]["pid"]
        if a.other_thread:
            check(t["tid"] != pid, "crash is on a non-main thread")
        # GCC's split-off parts (main.cold, f.part.0) count as the function itself.
        syms = [(f["symbol"] or "").split(".")[0] for f in t["frames"]]
        print("frames:", " | ".join(f"{f['pc']} {f['symbol']} [{f['method']}]" for f in t["frames"]))
        want = a.frames.split(",")
        # Expected functions must appear in this order, the first one within the top 4 frames.
        pos, ok = -1, True
        for w in want:
            try:
                pos = syms.index(w, pos + 1)
            except ValueError:
                ok = False
                break
        check(ok, f"frames {syms} do not contain {want} in order")
        check(want[0] in syms[:4], f"{want[0]} not among the top frames {syms[:4]}")
        if a.pc_zero:
            check(t["frames"][0]["pc"] == "0x0", "frame 0 pc is 0")
        check(len(t["registers"]) >= 17, "general registers recorded")
    imgs = doc["images"]
    if a.expect_truncated and not imgs:
        finish()  # cut off before the images: what was written has been checked
    main = [i for i in imgs if i["is_main"]]
    check(len(main) == 1 and os.path.realpath(main[0]["path"]) == os.path.realpath(a.crasher),
          "main executable image")
    check(main and main[0]["build_id"], "main image has a build-id")
    check(any(i["is_vdso"] for i in imgs) or a.runner, "vdso image listed")
    check(any("libc.so" in i["path"] for i in imgs), "libc image listed")
    if not a.expect_truncated:  # annotations come after the point where the handler was made to fault
        check(doc["annotations"].get("scenario") == a.scenario, "annotation recorded")

    text = subprocess.run([a.cli, "show", report], capture_output=True, text=True)
    check(text.returncode == 0 and want[0] in text.stdout, "faultline show (text) names the crashing function")

    if a.protoc:
        d = subprocess.run([a.protoc, "--decode=faultline.Report", "-I", a.proto_dir, "faultline.proto"],
                           stdin=open(report, "rb"), capture_output=True)
        check(d.returncode == 0 and b'magic: "faultline"' in d.stdout, f"protoc --decode failed: {d.stderr!r}")
finish()
