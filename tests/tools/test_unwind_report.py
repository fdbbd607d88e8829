#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline unwind REPORT`: threads re-walked offline from the stack memory a report kept.
#  - Real crashes of the integration crasher (default budget: the crashed thread's 8 KiB): the
#    re-walk gives the frames the device found.
#  - A crash 60 calls deep (fixtures/deep.c, -fomit-frame-pointer, under `faultline run` with
#    FAULTLINE_MAX_FRAMES=16): the device kept its 12 innermost frames and a few outermost ones;
#    the re-walk recovers the frames between them from the 8 KiB of memory: leaf, then level and
#    step alternately (each where nm places them), joining the device's outermost frames.
#  - A report without stack memory (FAULTLINE_CRASHED_STACK_BYTES=0) is shown as recorded, with
#    a message.
import json
import os
import re
import subprocess

import tooltest

args = tooltest.setup("--crasher", "--cc", "--source", "--preload")
check, run = tooltest.check, tooltest.run
W = args.workdir
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(W, "cache"), FAULTLINE_DEBUG_DIR="")


def crashed_thread(js):
    return [t for t in js["threads"] if t["crashed"]][0]


def show(*a):
    return json.loads(run([args.faultline, *a], env=ENV).stdout)


d = os.path.join(W, "reports")
os.makedirs(d)
for sc in ("null_deref", "thread", "omit_fp", "abort"):
    before = set(os.listdir(d))
    subprocess.run([args.crasher, sc, d], capture_output=True, timeout=120)
    new = [f for f in set(os.listdir(d)) - before if f.endswith(".flr")]
    if not check(len(new) == 1, f"{sc}: one report"):
        continue
    rep = os.path.join(d, new[0])
    rec = crashed_thread(show("show", "--json", rep))
    again = crashed_thread(show("unwind", "--format", "json", rep))
    check([f["pc"] for f in again["frames"]] == [f["pc"] for f in rec["frames"]] and
          [f["symbol"] for f in again["frames"]] == [f["symbol"] for f in rec["frames"]],
          f"{sc}: the re-walk gives the device's frames: {[f['symbol'] for f in again['frames']]}")
    check(again["unwind_stop"].startswith("re-walked offline from "), f"{sc}: {again['unwind_stop']}")

# A deep crash whose report kept 16 of its frames.
deep = os.path.join(W, "deep")
run([args.cc, "-O2", "-g", "-fomit-frame-pointer", "-o", deep, args.source])
funcs = {}
for line in run(["nm", "-S", deep]).stdout.splitlines():
    m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tT] (leaf|level|step)$", line)
    if m:
        funcs[m.group(3)] = (int(m.group(1), 16), int(m.group(2), 16))
dd = os.path.join(W, "deep-reports")
env = dict(ENV, FAULTLINE_MAX_FRAMES="16")
r = subprocess.run([args.faultline, "run", "--preload", args.preload, "--report-dir", dd, "--", deep, "60", "crash"],
                   capture_output=True, text=True, env=env, timeout=120)
reports = [f for f in os.listdir(dd) if f.endswith(".flr")] if os.path.isdir(dd) else []
if check(r.returncode == 128 + 11 and len(reports) == 1, f"deep: died of SIGSEGV with one report ({r.returncode})"):
    rep = os.path.join(dd, reports[0])
    rec = crashed_thread(show("show", "--json", rep))
    kept = rec["frames_omitted_at"]
    check(rec["frames_omitted"] > 0 and kept == 12, f"deep: the device kept {kept} innermost frames, omitted {rec['frames_omitted']}")
    js = show("unwind", "--max-frames", "512", "--format", "json", rep)
    again = crashed_thread(js)
    pcs = [f["pc"] for f in again["frames"]]
    check(pcs[:kept] == [f["pc"] for f in rec["frames"][:kept]], "deep: the re-walk starts with the device's innermost frames")

    def where(k, f):
        """The function of nm's holding the frame's file address (callers' at pc - 1)."""
        slide = int(js["images"][f["image"]]["slide"], 16) if f["image"] is not None else 0
        a = int(f["pc"], 16) - (1 if k else 0) - slide
        return next((n for n, (lo, size) in funcs.items() if lo <= a < lo + size), None)

    named = [where(k, f) for k, f in enumerate(again["frames"])]
    inner = [n for n in named if n]
    check(inner == ["leaf"] + ["level", "step"] * 61 and named[:len(inner)] == inner,
          f"deep: leaf, then level and step 61 times each (depth 60), by nm: {len(inner)} frames")
    tail = [f["pc"] for f in rec["frames"][kept:]]
    check(pcs[len(pcs) - len(tail):] == tail and len(pcs) == len(rec["frames"]) + rec["frames_omitted"],
          f"deep: the re-walk joins the device's outermost frames: {len(pcs)} frames in all "
          f"(device: {len(rec['frames'])} + {rec['frames_omitted']} omitted)")
    check(again["unwind_stop"].startswith("re-walked offline from 8192 bytes"), f"deep: says how: {again['unwind_stop']}")

# Without stack memory: as recorded, with a message.
nd = os.path.join(W, "no-memory")
env = dict(ENV, FAULTLINE_CRASHED_STACK_BYTES="0")
subprocess.run([args.faultline, "run", "--preload", args.preload, "--report-dir", nd, "--", deep, "3", "crash"],
               capture_output=True, env=env, timeout=120)
reports = [f for f in os.listdir(nd) if f.endswith(".flr")] if os.path.isdir(nd) else []
if check(len(reports) == 1, "no memory: one report"):
    rep = os.path.join(nd, reports[0])
    r = run([args.faultline, "unwind", "--format", "json", rep], env=ENV)
    check("no thread has stack memory" in r.stderr and
          crashed_thread(json.loads(r.stdout))["frames"] == crashed_thread(show("show", "--json", rep))["frames"],
          f"no memory: shown as recorded, and said: {r.stderr.strip()}")

tooltest.finish()
