#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline show --format sentry` on reports of real crashes (the integration crasher: several
# threads, code without frame pointers, abort, a stripped copy whose symbols are in a separate
# debug file): every event validates against Sentry's published event schema (sentry/, Draft 7,
# python3-jsonschema), says what `show --json` says of the same report (signal, crashed thread,
# frames outermost first, registers, threads, images), and gives each image the debug_id and
# code_id that `sentry-cli debug-files check` (npm @sentry/cli-linux-x64) computes from the file.
# Hand-made reports check the identifiers of the example and of a Mach-O UUID.
import json
import os
import re
import subprocess

import jsonschema

import tooltest

args = tooltest.setup("--crasher", "--mkreport", "--setup-interop")
check, run = tooltest.check, tooltest.run
W = args.workdir
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(W, "cache"), FAULTLINE_DEBUG_DIR="")

deps = run([args.setup_interop]).stdout.strip()
SENTRY_CLI = os.path.join(deps, "sentry-cli", "bin", "sentry-cli")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentry", "event.schema.json")) as f:
    VALIDATOR = jsonschema.Draft7Validator(json.load(f))


def show(fmt, report, *extra):
    r = run([args.faultline, "show", "--format", fmt, *extra, report], env=ENV)
    return json.loads(r.stdout)


def crash(crasher, scenario, d):
    os.makedirs(d, exist_ok=True)
    before = set(os.listdir(d))
    r = subprocess.run([crasher, scenario, d], capture_output=True, timeout=120)
    new = [f for f in set(os.listdir(d)) - before if f.endswith(".flr")]
    check(r.returncode < 0 and len(new) == 1, f"{scenario}: died of a signal ({r.returncode}), one report {new}")
    return os.path.join(d, new[0]) if new else None


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
os.makedirs(stripped_dir)
debug = os.path.join(W, "crasher.debug")
stripped = os.path.join(stripped_dir, "crasher")
run(["objcopy", "--only-keep-debug", args.crasher, debug])
run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + debug, args.crasher, stripped])
rep = crash(stripped, "null_deref", os.path.join(W, "reports-stripped"))
if rep:
    ev = check_event("stripped", rep, symbols=[W])
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

tooltest.finish()
