#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# One watchdog / run-marker case: hangapp runs in a fresh report directory, then the reports are
# decoded by the CLI (every format), the raw records by protoc --decode_raw, the stuck function's
# range by nm, and the run's ending by fl_last_run (hangapp lastrun).
import argparse, glob, json, os, re, shlex, signal, subprocess, sys, tempfile, time

p = argparse.ArgumentParser()
p.add_argument("--app", required=True)
p.add_argument("--cli", required=True)
p.add_argument("--nm", default="nm")
p.add_argument("--case", required=True)
p.add_argument("--runner", default="")
p.add_argument("--symbols", action="append", default=[])
a = p.parse_args()

# The hang lasts BLOCK - THRESHOLD = 3.2 s past detection: the capture must reach the monitored
# thread before it recovers, and the watchdog see it stuck once more, even on a loaded machine
# (at 2 s, two test suites at once on 2 cores once took longer).
THRESHOLD, CHECK, BLOCK, AFTER = 800, 200, 4000, 1500
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def app_cmd(*args):
    return shlex.split(a.runner) + [a.app] + [str(x) for x in args]


def run_app(rdir, *args, timeout=120):
    r = subprocess.run(app_cmd(rdir, *args), capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def reports(rdir):
    return sorted(glob.glob(os.path.join(rdir, "faultline-*.flr")))


def cli(*args):
    sym = [x for d in a.symbols for x in ("--symbols", d)] if args[0] in ("show", "triage") else []
    r = subprocess.run([a.cli, *args[:1], *sym, *args[1:]], capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout, r.stderr


def show_json(path):
    rc, out, err = cli("show", "--json", path)
    check(rc == 0, f"faultline show --json exits 0 ({err.strip()[:200]})")
    return json.loads(out)


def last_run(rdir):
    rc, out, err = run_app(rdir, "lastrun")
    print("  " + out.strip())
    m = re.match(r"lastrun (.*)", out.strip())
    return dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}


def hang_records(path):
    """The top-level Hang records (field 11) of the file as protoc --decode_raw sees them."""
    with open(path, "rb") as f:
        r = subprocess.run(["protoc", "--decode_raw"], stdin=f, capture_output=True, text=True)
    check(r.returncode == 0, f"protoc --decode_raw decodes the report ({r.stderr.strip()[:200]})")
    recs, cur, depth = [], None, 0
    for line in r.stdout.splitlines():
        s = line.strip()
        # Top-level fields only (no indentation): a thread's packed fields may decode as messages.
        if depth == 0 and line == "11 {":
            cur, depth = {}, 1
            continue
        if cur is not None:
            if s.endswith("{"):
                depth += 1
            elif s == "}":
                depth -= 1
                if depth == 0:
                    recs.append(cur)
                    cur = None
            elif depth == 1 and ":" in s:
                k, v = s.split(":", 1)
                cur[int(k)] = int(v.strip())
    return recs


def nm_range(name):
    out = subprocess.run([a.nm, "-S", "--defined-only", a.app], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            start, size = int(f[0], 16), int(f[1], 16)
            return start, start + size
    return None


def check_hang_report(rdir, func, recovered):
    rs = reports(rdir)
    check(len(rs) == 1, f"exactly one report ({len(rs)}: {[os.path.basename(x) for x in rs]})")
    if len(rs) != 1:
        return None
    path = rs[0]
    doc = show_json(path)
    check(doc["kind"] == "hang", f"kind is hang ({doc['kind']})")
    check(doc["signal"] is None, "no signal")
    h = doc["hang"]
    check(h is not None, "the report has a Hang record")
    if not h:
        return doc
    check(h["threshold_ms"] == THRESHOLD and h["check_interval_ms"] == CHECK,
          f"threshold and check interval recorded ({h['threshold_ms']}, {h['check_interval_ms']})")
    check(h["duration_ms"] >= THRESHOLD, f"duration {h['duration_ms']} ms >= threshold {THRESHOLD}")
    check(h["recovered"] == recovered, f"recovered is {recovered}")
    mon = [t for t in doc["threads"] if t["monitored"]]
    check(len(mon) == 1, f"one monitored thread ({len(mon)})")
    if not mon:
        return doc
    t = mon[0]
    check(t["tid"] == h["monitored_tid"], "the marked thread is the Hang's monitored_tid")
    check(t["tid"] == doc["process"]["pid"], "the monitored thread is the main thread")
    syms = [f["symbol"] for f in t["frames"]]
    print("  monitored thread:", syms[:8])
    check(func in syms, f"{func} is on the monitored thread's stack")
    rng = nm_range(func)
    check(rng is not None, f"nm knows {func}")
    if func in syms and rng:
        f = t["frames"][syms.index(func)]
        img = doc["images"][f["image"]]
        check(os.path.basename(img["path"]) == os.path.basename(a.app), "in hangapp's image")
        pc = int(f["pc"], 16) - int(img["slide"], 16)
        # A caller's pc is a return address: inside the function, or just past its end.
        check(rng[0] <= pc <= rng[1], f"pc 0x{pc:x} - slide within nm's {func} [0x{rng[0]:x}, 0x{rng[1]:x}]")
    main_thread_first = [x["symbol"] for x in t["frames"]]
    check("main" in main_thread_first, "main is below it")
    # The raw records: at detection, then (after a recovery) the appended final one.
    recs = hang_records(path)
    check(len(recs) == (2 if recovered else 1), f"{len(recs)} Hang record(s) in the file")
    if recs:
        check(recs[0].get(3, 0) >= THRESHOLD * 1000000, f"detection duration {recs[0].get(3, 0)} ns >= threshold")
        check(6 not in recs[0], "the detection record does not say recovered")
    if recovered and len(recs) == 2:
        check(recs[1].get(6) == 1, "the appended record says recovered")
        check(recs[1].get(3, 0) > recs[0].get(3, 0), "the final duration is longer than at detection")
        check(abs(h["duration_ms"] * 1e6 - recs[1][3]) < 1e6, "the reader sees the final duration")
    # Every view says it is a hang and how long.
    rc, text, _ = cli("show", path)
    check(re.search(r"Report Kind:\s+hang", text) is not None, "text: Report Kind hang")
    check(re.search(r"Hang:\s+tid \d+ stuck for at least \d+\.\d{3} s", text) is not None, "text: Hang row with the duration")
    check("[Hung]" in text and "Hung Thread:" in text, "text: the hung thread marked")
    rc, apple, _ = cli("show", "--format", "apple", path)
    check("hang" in apple and "Hang Duration:" in apple and " Hung:" in apple, "apple: a hang, its duration, the thread")
    rc, tomb, _ = cli("show", "--format", "tombstone", path)
    check(re.search(r"hang: tid \d+ stuck for at least", tomb) is not None, "tombstone: hang line")
    rc, sen, _ = cli("show", "--format", "sentry", path)
    try:
        ev = json.loads(sen)
        exc = ev["exception"]["values"][0]
        mon = [t for t in doc["threads"] if t["monitored"]]
        check(ev["level"] == "error" and exc["type"] == "AppHang" and exc["mechanism"]["type"] == "AppHang" and
              mon and exc["thread_id"] == mon[0]["tid"] and
              [f["instruction_addr"] for f in exc["stacktrace"]["frames"]] == [f["pc"] for f in reversed(mon[0]["frames"])],
              f"sentry: an AppHang with the monitored thread's stack ({exc.get('value')})")
        # Sentry's event schema (tests/tools/sentry), with Debian's python3-jsonschema.
        schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "sentry", "event.schema.json")
        v = subprocess.run(["/usr/bin/python3", "-c", "import json,sys,jsonschema; jsonschema.validate("
                            "json.load(sys.stdin), json.load(open(sys.argv[1])))", schema],
                           input=sen, capture_output=True, text=True)
        check(v.returncode == 0, f"sentry: the hang's event validates against Sentry's schema {v.stderr.strip()[-300:]}")
    except (ValueError, KeyError, IndexError) as e:
        check(False, f"sentry: the event parses ({e})")
    rc, lst, _ = cli("list", rdir)
    check(re.search(r"hang \(\d+\.\d{3} s", lst) is not None, f"list: hang and its duration ({lst.strip()[:200]})")
    rc, tri, _ = cli("triage", "--json", "--no-progress", rdir)
    try:
        groups = json.loads(tri)
        check(len(groups) == 1 and groups[0]["signature"].startswith("hang: "),
              f"triage: one group, signature starts with 'hang: ' ({groups[0]['signature'] if groups else None})")
    except ValueError:
        check(False, "triage --json parses")
    return doc


def start(rdir, *args):
    return subprocess.Popen(app_cmd(rdir, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def main():
    with tempfile.TemporaryDirectory(prefix="fl-watchdog-") as tmp:
        rdir = os.path.join(tmp, "reports")
        case = a.case
        if case in ("hang_recovers", "hang_sleep"):
            mode, func = ("spin", "wd_stuck_spin") if case == "hang_recovers" else ("sleep", "wd_stuck_sleep")
            rc, out, err = run_app(rdir, mode, THRESHOLD, CHECK, BLOCK, AFTER)
            check(rc == 0 and "done" in out, f"hangapp {mode} exits 0 after recovering ({rc}, {err.strip()[:300]})")
            check_hang_report(rdir, func, True)
            lr = last_run(rdir)
            check(lr.get("ending") == "clean", "fl_last_run: a recovered hang then exit is clean")
        elif case == "hang_twice":
            rc, out, err = run_app(rdir, "twice", THRESHOLD, CHECK, BLOCK, AFTER)
            check(rc == 0, f"exits 0 ({rc})")
            docs = [show_json(r) for r in reports(rdir)]
            check(len(docs) == 2, f"two hangs, two reports ({len(docs)})")
            seqs = sorted(d["hang"]["sequence"] for d in docs if d["hang"])
            check(seqs == [1, 2], f"sequences 1 and 2 ({seqs})")
            check(all(d["hang"] and d["hang"]["recovered"] for d in docs), "both recovered")
            funcs = sorted(f["symbol"] for d in docs for t in d["threads"] if t["monitored"]
                           for f in t["frames"] if f["symbol"] in ("wd_stuck_spin", "wd_stuck_sleep"))
            check(funcs == ["wd_stuck_sleep", "wd_stuck_spin"], f"one in each function ({funcs})")
        elif case == "hang_killed":
            pr = start(rdir, "forever", THRESHOLD, CHECK)
            deadline = time.time() + 60
            while time.time() < deadline and not reports(rdir):
                time.sleep(0.1)
            check(bool(reports(rdir)), "a hang report appears while it is stuck")
            time.sleep(3 * CHECK / 1000)  # a few more checks update the marker's duration
            pr.send_signal(signal.SIGKILL)
            pr.wait(timeout=60)
            check(pr.returncode == -signal.SIGKILL, f"killed by SIGKILL ({pr.returncode})")
            doc = check_hang_report(rdir, "wd_stuck_forever", False)
            lr = last_run(rdir)
            check(lr.get("ending") == "hung", "fl_last_run: the run ended hung")
            if doc:
                check(lr.get("report") == doc["report_id"], "fl_last_run names the hang report")
            check(int(lr.get("hang_ms", 0)) >= THRESHOLD, "fl_last_run: stuck at least the threshold")
            check(lr.get("rebooted") == "0", "fl_last_run: not rebooted since")
            lr = last_run(rdir)
            check(lr == {} or lr.get("ending") is None, "told once: the second call finds nothing")
        elif case == "clean":
            rc, out, err = run_app(rdir, "beat", THRESHOLD, CHECK, 500)
            check(rc == 0, f"exits 0 ({rc}, {err.strip()[:200]})")
            check(reports(rdir) == [], "no report")
            lr = last_run(rdir)
            check(lr.get("ending") == "clean" and lr.get("report") == "-", "fl_last_run: clean, no report")
            check(lr.get("runs") == "1" and lr.get("unclean") == "0", "one run, none unclean")
        elif case == "keeps_beating":
            rc, out, err = run_app(rdir, "beat", THRESHOLD, CHECK, 3000)
            check(rc == 0, f"exits 0 ({rc})")
            check(reports(rdir) == [], "no report for a loop that keeps beating")
            pr = start(rdir, "beat", THRESHOLD, CHECK, 60000)
            time.sleep(1.5)
            # Another process of the app asks while this run goes on: its marker is locked, so
            # it is left alone (the clean run before it was told and is gone).
            check(last_run(rdir).get("ending") == "clean", "fl_last_run meanwhile: the earlier clean run")
            check(last_run(rdir).get("error") == "-5", "fl_last_run meanwhile: FL_ENOTFOUND, the live run is left alone")
            check(len(glob.glob(os.path.join(rdir, ".run-*"))) == 1, "the live run's marker is still there")
            pr.send_signal(signal.SIGKILL)
            pr.wait(timeout=60)
            check(reports(rdir) == [], "still no report")
            lr = last_run(rdir)
            check(lr.get("ending") == "killed" and lr.get("report") == "-",
                  "fl_last_run: the SIGKILLed beating loop ended killed")
            check(lr.get("runs") == "1" and lr.get("unclean") == "1", "one run (the clean one was told), unclean")
        elif case in ("crash", "exit_crash"):
            rc, out, err = run_app(rdir, "crash" if case == "crash" else "exitcrash", THRESHOLD, CHECK)
            check(rc in (-signal.SIGSEGV, 128 + signal.SIGSEGV), f"dies of SIGSEGV ({rc})")
            rs = reports(rdir)
            check(len(rs) == 1, "one report")
            doc = show_json(rs[0]) if rs else None
            if doc:
                check(doc["kind"] == "crash" and doc["hang"] is None, "a crash report, no Hang")
            lr = last_run(rdir)
            check(lr.get("ending") == "crashed", "fl_last_run: crashed")
            if doc:
                check(lr.get("report") == doc["report_id"], "fl_last_run names the crash report")
        elif case == "fork":
            rc, out, err = run_app(rdir, "forkcrash", THRESHOLD, CHECK, timeout=60)
            check(f"child signal {signal.SIGSEGV}" in out, f"the fork child crashed ({out.strip()})")
            rs = reports(rdir)
            check(len(rs) == 1 and show_json(rs[0])["kind"] == "crash", "the child's crash report")
            lr = last_run(rdir)
            check(lr.get("ending") == "killed" and lr.get("runs") == "1",
                  "fl_last_run: the parent's run (_exit) is killed; the child's crash is not a run")
            rdir2 = os.path.join(tmp, "reports2")
            rc, out, err = run_app(rdir2, "forkstop", THRESHOLD, CHECK, 300, timeout=60)
            check(rc == 0 and "child exit 0" in out, f"the child stopped the watchdog it has not got and exited ({rc}, {out.strip()})")
            lr = last_run(rdir2)
            check(lr.get("ending") == "clean" and lr.get("runs") == "1", "fl_last_run: one run, clean")
        elif case == "quick_exit":
            rc, out, err = run_app(rdir, "quickexit", THRESHOLD, CHECK)
            check(rc == 0, "_exit(0)")
            lr = last_run(rdir)
            check(lr.get("ending") == "killed", "fl_last_run: _exit is not a clean exit (told as killed)")
        elif case == "sigstop":
            # Iterations of 250 ms of CPU time: after SIGCONT the loop's next beat is still up to
            # 250 ms away, so the watchdog's first (late) wake finds no beat. The threshold is
            # ten iterations: on a loaded machine (load 10 on 2 cores) an iteration takes over a
            # second of wall time, and the loop must not look hung while it runs.
            threshold = 2500
            pr = start(rdir, "work", threshold, CHECK, 10000)
            time.sleep(1.0)
            pr.send_signal(signal.SIGSTOP)
            time.sleep(3 * threshold / 1000 + 0.5)
            pr.send_signal(signal.SIGCONT)
            out, err = pr.communicate(timeout=120)
            check(pr.returncode == 0, f"exits 0 ({pr.returncode}, {err.strip()[:200]})")
            check(reports(rdir) == [], "no hang report for a process stopped longer than the threshold")
            lr = last_run(rdir)
            check(lr.get("ending") == "clean", "fl_last_run: clean")
        else:
            check(False, f"unknown case {case}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


main()
