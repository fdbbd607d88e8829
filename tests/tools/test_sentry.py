#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline show --format sentry` on reports of real crashes (the integration crasher: several
# threads, code without frame pointers, abort, a stripped copy whose symbols are in a separate
# debug file): every event validates against Sentry's published event schema (sentry/, Draft 7,
# python3-jsonschema), says what `show --json` says of the same report (signal, crashed thread,
# frames outermost first, registers, threads, images), and gives each image the debug_id and
# code_id that `sentry-cli debug-files check` (npm @sentry/cli-linux-x64) computes from the file.
# `faultline upload --sentry DSN DIR` against a loopback Sentry-shaped sink (tests/upload/server.py):
# the endpoint and X-Sentry-Auth from the DSN, the envelope's framing (its event validating, the
# minidump attached), and the upload's fault cases (server down, 429 with Retry-After, 413, a
# connection dropped mid-body).
# Hand-made reports check the identifiers of the example and of a Mach-O UUID. A program
# linked without a build-id, crashed under `faultline run`, is identified by its .text section as
# sentry-cli and Breakpad's dump_syms identify the file.
import json
import os
import re
import shutil
import socket
import subprocess
import time

import jsonschema

import tooltest

args = tooltest.setup("--crasher", "--mkreport", "--setup-interop", "--server", "--cc", "--source", "--preload")
check, run, crash = tooltest.check, tooltest.run, tooltest.crash
W = args.workdir
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(W, "cache"), FAULTLINE_DEBUG_DIR="")

deps = run([args.setup_interop]).stdout.strip()
SENTRY_CLI = os.path.join(deps, "sentry-cli", "bin", "sentry-cli")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentry", "event.schema.json")) as f:
    VALIDATOR = jsonschema.Draft7Validator(json.load(f))


def show(fmt, report, *extra):
    r = run([args.faultline, "show", "--format", fmt, *extra, report], env=ENV)
    return json.loads(r.stdout)


_ids = {}


def sentry_cli_ids(path):
    """(debug_id, code_id) of the file's first variant, by sentry-cli; None if it has none."""
    if path not in _ids:
        r = run([SENTRY_CLI, "debug-files", "check", "--json", path], check_rc=False)
        try:
            v = json.loads(r.stdout)["variants"][0]
            _ids[path] = (v.get("debug_id"), v.get("code_id"))
        except (ValueError, KeyError, IndexError):
            _ids[path] = None
    return _ids[path]


def check_event(name, report, symbols=()):
    sym = sum((["--symbols", s] for s in symbols), [])
    ev, js = show("sentry", report, *sym), show("json", report, *sym)
    errors = sorted(VALIDATOR.iter_errors(ev), key=lambda e: list(e.path))
    check(not errors, f"{name}: the event validates: " + "; ".join(
        f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:5]))
    check(ev["event_id"] == js["report_id"] and ev["platform"] == "native" and ev["level"] == "fatal",
          f"{name}: event id, platform, level")
    exc = ev["exception"]["values"][0]
    sig, mech = js["signal"], exc["mechanism"]
    check(mech["type"] == "signalhandler" and mech["handled"] is False and
          mech["meta"]["signal"] == {"number": sig["number"], "code": sig["code"], "name": sig["name"],
                                     "code_name": sig["code_name"]} and exc["type"] == sig["name"],
          f"{name}: the exception is the signal: {exc['type']} {mech}")
    crashed = [t for t in js["threads"] if t["crashed"]][0]
    check(exc["thread_id"] == crashed["tid"], f"{name}: the exception's thread is the crashed one")
    frames = exc["stacktrace"]["frames"]
    check([int(f["instruction_addr"], 16) for f in frames] ==
          [int(f["pc"], 16) for f in reversed(crashed["frames"])],
          f"{name}: the exception's frames are the crashed thread's, outermost first")
    named = [(f.get("function"), s["symbol"]) for f, s in zip(reversed(frames), crashed["frames"])]
    check(all(a == b for a, b in named) and any(a for a, _ in named),
          f"{name}: function names as show --json gives them: {named[:4]}")
    check(exc["stacktrace"]["registers"] == crashed["registers"] and crashed["registers"],
          f"{name}: the crashed thread's registers")
    tids = [t["id"] for t in ev["threads"]["values"]]
    check(tids == [t["tid"] for t in js["threads"]], f"{name}: every thread, in order: {tids}")
    for t, jt in zip(ev["threads"]["values"], js["threads"]):
        if jt["crashed"]:
            check(t["crashed"] and "stacktrace" not in t, f"{name}: crashed thread {t['id']} (its stack in the exception)")
        elif jt["frames"]:
            check([int(f["instruction_addr"], 16) for f in t["stacktrace"]["frames"]] ==
                  [int(f["pc"], 16) for f in reversed(jt["frames"])], f"{name}: thread {t['id']}'s frames")
    images = ev["debug_meta"]["images"]
    check(len(images) == len(js["images"]), f"{name}: every image")
    compared = 0
    for img, ji in zip(images, js["images"]):
        check(img["type"] == "elf" and int(img["image_addr"], 16) == int(ji["start"], 16) and
              img["image_size"] == int(ji["end"], 16) - int(ji["start"], 16) and img["code_file"] == ji["path"],
              f"{name}: image {ji['path']}: type, address, size")
        path = ji["path"]
        if ji["build_id_kind"] != "gnu" or not os.path.isfile(path):
            continue  # [vdso] has no file to give sentry-cli
        ids = sentry_cli_ids(path)
        check(ids == (img["debug_id"], img.get("code_id")),
              f"{name}: {path}: debug_id/code_id {img['debug_id']}/{img.get('code_id')} vs sentry-cli {ids}")
        compared += 1
    check(compared >= 2, f"{name}: identifiers compared with sentry-cli for {compared} images")
    return ev


# ---- Real crashes ----
d = os.path.join(W, "reports")
for sc in ("null_deref", "thread", "omit_fp", "abort"):
    rep = crash(args.crasher, sc, d)
    if rep:
        check_event(sc, rep)

# A stripped crasher whose symbols are in a separate debug file: the same build-id, the names
# from the debug file; sentry-cli gives the stripped file and the debug file the same ids.
stripped_dir = os.path.join(W, "stripped")
stripped, debug = tooltest.stripped_copy(args.crasher, stripped_dir)
rep = crash(stripped, "null_deref", os.path.join(W, "reports-stripped"))
if rep:
    ev = check_event("stripped", rep, symbols=[stripped_dir])
    check(sentry_cli_ids(stripped) == sentry_cli_ids(debug) != None,
          "sentry-cli: the stripped file and its debug file have the same identifiers")

# ---- Identifiers of hand-made reports ----
# The example: build-id 613807ff6021bac7... -> ff073861-2160-c7ba-3eb6-7911c4e8dd87.
elf_id = "613807ff6021bac73eb67911c4e8dd8701020304"
uuid = "84a04d240e603810a8c090a65e2df61a"  # an LC_UUID, shown as is
os.makedirs(os.path.join(W, "made"))
mk = run([args.mkreport, os.path.join(W, "made"), "--image", f"/lib/a.so,gnu,{elf_id},0,1000,2000",
          "--image", f"/usr/lib/b.dylib,macho,{uuid},0,3000,4000", "--frame", "1010"]).stdout.strip()
ev = show("sentry", mk)
imgs = {i["code_file"]: i for i in ev["debug_meta"]["images"]}
check(imgs["/lib/a.so"]["debug_id"] == "ff073861-2160-c7ba-3eb6-7911c4e8dd87" and
      imgs["/lib/a.so"]["code_id"] == elf_id, f"the issue's example build-id: {imgs['/lib/a.so']}")
check(imgs["/usr/lib/b.dylib"]["type"] == "macho" and "code_id" not in imgs["/usr/lib/b.dylib"] and
      imgs["/usr/lib/b.dylib"]["debug_id"] == re.sub(r"(.{8})(.{4})(.{4})(.{4})(.{12})", r"\1-\2-\3-\4-\5", uuid),
      f"a Mach-O UUID is the debug id unchanged: {imgs['/usr/lib/b.dylib']}")
check(not list(VALIDATOR.iter_errors(ev)), "the hand-made report's event validates")

# ---- A program without a build-id ----
# fixtures/deep.c and enough other code for a .text of more than 4 KiB (below that, and for a
# size that is not a multiple of 16, Breakpad folds bytes past .text's end and Sentry does not:
# docs/interop.md).
filler = os.path.join(W, "filler.c")
with open(filler, "w") as f:
    for i in range(128):
        f.write(f"int filler{i}(int *v, int n) {{ int s = {i}; for (int k = 0; k < n; k++) "
                f"s += v[k] * {i + 3} ^ (v[k] >> {i % 7}) / (k + {i + 1}); return s; }}\n")
nobid = os.path.join(W, "nobid")
run([args.cc, "-O2", "-g", "-Wl,--build-id=none", "-o", nobid, args.source, filler])
text = run(["readelf", "-SW", nobid]).stdout
m = re.search(r"\.text\s+PROGBITS\s+\S+\s+\S+\s+([0-9a-f]+)", text)
check(m and int(m.group(1), 16) > 4096 and "Build ID" not in run(["readelf", "-n", nobid]).stdout,
      f"the program has no build-id and a .text of {m and int(m.group(1), 16)} bytes")
nd = os.path.join(W, "nobid-reports")
subprocess.run([args.faultline, "run", "--preload", args.preload, "--report-dir", nd, "--", nobid, "3", "crash"],
               capture_output=True, env=ENV, timeout=120)
reps = [os.path.join(nd, f) for f in os.listdir(nd) if f.endswith(".flr")] if os.path.isdir(nd) else []
if check(len(reps) == 1, "the program without a build-id crashed with one report"):
    js = show("json", reps[0])
    ev = show("sentry", reps[0])
    main_js = [i for i in js["images"] if i["path"] == nobid]
    main_ev = [i for i in ev["debug_meta"]["images"] if i["code_file"] == nobid]
    check(main_js and main_js[0]["build_id_kind"] == "text_section", f"its report identifies it by .text: {main_js}")
    cli = sentry_cli_ids(nobid)
    check(main_ev and cli and main_ev[0]["debug_id"] == cli[0] and "code_id" not in main_ev[0] and cli[1] is None,
          f"its debug_id is sentry-cli's and it has no code_id: {main_ev and main_ev[0]} vs {cli}")
    bp = os.path.join(deps, "minidump", "bin", "linux-x64")
    sym = run([os.path.join(bp, "dump_syms"), nobid], check_rc=False).stdout.split("\n", 1)[0].split()
    dump = os.path.join(W, "nobid.dmp")
    run([args.faultline, "minidump", "-o", dump, reps[0]])
    mods = [l.split("|") for l in run([os.path.join(bp, "minidump_stackwalk"), "-m", dump], check_rc=False).stdout.splitlines()
            if l.startswith("Module|nobid|")]
    check(len(sym) == 5 and mods and mods[0][4] == sym[3],
          f"its minidump module's debug id is dump_syms': {mods and mods[0][4]} vs {sym[3:4]}")

# ---- faultline upload --sentry, against the loopback sink ----
LOG = os.path.join(W, "sink")
os.makedirs(LOG)
sink = subprocess.Popen([__import__("sys").executable, args.server, LOG], stdout=subprocess.PIPE, text=True)
PORT = int(sink.stdout.readline())
KEY = "0123456789abcdef0123456789abcdef"


def requests():
    out = []
    for name in sorted(f for f in os.listdir(LOG) if f.endswith(".req")):
        with open(os.path.join(LOG, name)) as f:
            lines = f.read().splitlines()
        with open(os.path.join(LOG, name[:-4] + ".body"), "rb") as f:
            body = f.read()
        req = {"headers": {}, "body": body}
        for l in lines:
            k, _, v = l.partition(" ")
            if k == "header":
                hk, _, hv = v.partition(": ")
                req["headers"][hk.lower()] = hv
            else:
                req[k] = v
        out.append(req)
    return out


def envelope_items(body):
    """(header, [(item header, payload)]) of a Sentry envelope, by its framing rules."""
    nl = body.index(b"\n")
    header, pos, items = json.loads(body[:nl]), nl + 1, []
    while pos < len(body):
        nl = body.index(b"\n", pos)
        ih = json.loads(body[pos:nl])
        payload = body[nl + 1:nl + 1 + ih["length"]]
        check(len(payload) == ih["length"], f"envelope item {ih['type']}: {ih['length']} bytes")
        items.append((ih, payload))
        pos = nl + 1 + ih["length"]
        if body[pos:pos + 1] == b"\n":
            pos += 1
    return header, items


def upload(dsn, d, *extra):
    return run([args.faultline, "upload", *extra, "--sentry", dsn, d], check_rc=False, env=ENV)


def fresh_dir(name, n=1):
    d = os.path.join(W, "up-" + name)
    for _ in range(n):
        crash(args.crasher, "thread", d)
    return d


def pending(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".flr"))


# Delivered: one envelope per report, to /PATH/api/PROJECT/envelope/, then deleted.
d = fresh_dir("ok", 2)
ids = [f[len("faultline-"):-4] for f in pending(d)]
r = upload(f"http://{KEY}@127.0.0.1:{PORT}/ok/sentry/42", d)
reqs = requests()
check(r.returncode == 0 and not pending(d) and len(reqs) == 2, f"upload --sentry: both sent and deleted: {r.stdout}{r.stderr}")
for req in reqs:
    h = req["headers"]
    check(req["path"] == "/ok/sentry/api/42/envelope/", f"the envelope endpoint: {req['path']}")
    check(h.get("content-type") == "application/x-sentry-envelope", f"Content-Type {h.get('content-type')}")
    auth = h.get("x-sentry-auth", "")
    check(auth.startswith("Sentry ") and f"sentry_key={KEY}" in auth and "sentry_version=7" in auth,
          f"X-Sentry-Auth: {auth}")
    eh, items = envelope_items(req["body"])
    check(eh["event_id"] in ids and eh["dsn"].startswith(f"http://{KEY}@") and "sent_at" in eh,
          f"envelope header {eh}")
    types = [ih["type"] for ih, _ in items]
    check(types == ["event", "attachment"], f"items: the event, then the minidump: {types}")
    event = json.loads(items[0][1])
    check(event["event_id"] == eh["event_id"] and not list(VALIDATOR.iter_errors(event)),
          "the envelope's event validates")
    ih, md = items[1]
    check(ih.get("attachment_type") == "event.minidump" and md[:4] == b"MDMP", f"the minidump attachment {ih}")

# Server down: kept, untouched.
s = socket.socket()
s.bind(("127.0.0.1", 0))
closed_port = s.getsockname()[1]
s.close()
d = fresh_dir("down")
r = upload(f"http://{KEY}@127.0.0.1:{closed_port}/42", d, "--attempts", "2")
check(r.returncode == 1 and len(pending(d)) == 1 and "kept" in r.stdout, f"server down: kept: {r.stdout}")

# 429 with Retry-After: 1, then 200: sent after waiting at least that long.
shutil.rmtree(LOG)
os.makedirs(LOG)
d = fresh_dir("429")
r = upload(f"http://{KEY}@127.0.0.1:{PORT}/retry-after/1/1/s429/7", d)
reqs = requests()
gap = float(reqs[-1]["time"]) - float(reqs[0]["time"]) if len(reqs) == 2 else 0
check(r.returncode == 0 and not pending(d) and len(reqs) == 2 and gap >= 0.95,
      f"429 + Retry-After 1: sent on the 2nd request, {gap:.2f} s later: {r.stdout}")

# 413: refused for good, quarantined with the reason.
d = fresh_dir("413")
r = upload(f"http://{KEY}@127.0.0.1:{PORT}/status/413/s413/7", d)
q = os.path.join(d, "quarantine")
check(r.returncode == 1 and not pending(d) and os.path.isdir(q) and
      any(f.endswith(".reason") for f in os.listdir(q)), f"413: quarantined: {r.stdout}")

# A connection dropped mid-body: retried, then delivered.
shutil.rmtree(LOG)
os.makedirs(LOG)
d = fresh_dir("drop")
r = upload(f"http://{KEY}@127.0.0.1:{PORT}/drop/1/sdrop/7", d)
reqs = requests()
check(r.returncode == 0 and not pending(d) and [q["status"] for q in reqs] == ["dropped", "200"],
      f"dropped connection: retried and sent: {[q['status'] for q in reqs]} {r.stdout}")

# Not a DSN: a usage error, nothing sent.
for bad in ("http://127.0.0.1:1/42", "ftp://k@h/42", f"http://{KEY}@h/project", f"http://{KEY}@h/"):
    r = upload(bad, d)
    check(r.returncode == 2 and "DSN" in r.stderr, f"{bad}: refused as a DSN ({r.returncode}) {r.stderr}")
sink.kill()

tooltest.finish()
