#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `faultline triage` on reports of real crashes: the integration crasher's scenarios, each run
# several times (each run its own ASLR slides), must give one group per crash site with exact
# counts and the right reports, the machinery skipped, the same groups with a stripped crasher
# (image+offset keys); damaged files are counted and named; a progress bar on a terminal.
import json
import os
import pty
import re
import shutil
import subprocess

import tooltest

args = tooltest.setup("--crasher")

check = tooltest.check


W = args.workdir
ENV = dict(os.environ, FAULTLINE_CACHE_DIR=os.path.join(W, "cache"))

# scenario -> (runs, first frame of its signature, a function that must follow it)
SITES = {
    "null_deref": (4, "null_c", "null_b"),
    "abort": (3, "abort_b", "abort_a"),        # abort, raise, pthread_kill skipped
    "trap": (3, "trap_b", "trap_a"),
    "divzero": (3, "divzero_b", "divzero_a"),   # GCC's divzero_b.constprop.0
    "thread": (3, "thread_c", "thread_b"),      # crashed on a non-main thread
    "omit_fp": (2, "omit_c", "omit_b"),
    "heap_invalid": (2, "corrupt_b", "corrupt_a"),  # free, _int_free, malloc_printerr, ... skipped
}
MACHINERY = {"abort", "raise", "__pthread_kill_implementation", "malloc_printerr", "_int_free",
             "__libc_free", "__libc_message", "pthread_kill"}


def crash_all(crasher, d):
    """Runs every scenario its number of times into d; {scenario: [report paths]}."""
    os.makedirs(d, exist_ok=True)
    made = {}
    for sc, (runs, _, _) in SITES.items():
        for _ in range(runs):
            before = set(os.listdir(d))
            r = subprocess.run([crasher, sc, d], capture_output=True, timeout=60)
            new = [f for f in set(os.listdir(d)) - before if f.endswith(".flr")]
            check(r.returncode < 0 and len(new) == 1, f"{sc}: died of a signal ({r.returncode}), one report {new}")
            made.setdefault(sc, []).extend(os.path.join(d, f) for f in new)
    return made


def triage(*a, env=ENV):
    r = subprocess.run([args.faultline, "triage", *a], capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"triage {a}: exit {r.returncode} {r.stderr}")
    return r


def check_groups(groups, made, what, names=True):
    real = [g for g in groups if not g["damaged"]]
    check(len(real) == len(SITES), f"{what}: {len(real)} groups for {len(SITES)} sites: "
                                   f"{[g['signature'] for g in real]}")
    counts = [g["count"] for g in groups]
    check(counts[: len(real)] == sorted(counts[: len(real)], reverse=True), f"{what}: sorted by count {counts}")
    for sc, files in made.items():
        mine = [g for g in real if set(g["reports"]) & set(files)]
        if not check(len(mine) == 1, f"{what}: {sc}'s reports in {len(mine)} groups"):
            continue
        g = mine[0]
        check(sorted(g["reports"]) == sorted(files) and g["count"] == len(files),
              f"{what}: {sc}: group has {g['count']} reports, exactly its {len(files)}")
        check(len(g["report_ids"]) == g["count"], f"{what}: {sc}: one id per report")
        keys = g["signature"].split(" | ")
        check(len(keys) == 3, f"{what}: {sc}: three frames in {g['signature']!r}")
        check(not re.search(r"0x[0-9a-f]{9,}", g["signature"]), f"{what}: {sc}: no runtime address in the signature")
        if names:
            _, first, second = SITES[sc]
            check(keys[0] == first and keys[1] == second, f"{what}: {sc}: signature {g['signature']!r}")
            check(not MACHINERY & set(keys), f"{what}: {sc}: machinery in {g['signature']!r}")
            check(g["stack"] and any(f["symbol"] and f["symbol"].startswith(first) for f in g["stack"]),
                  f"{what}: {sc}: representative stack names {first}")
        check(g["app_versions"] == ["crasher 1.2.3"], f"{what}: {sc}: versions {g['app_versions']}")
        check(len(g["signals"]) == 1 and g["first_seen"] <= g["last_seen"], f"{what}: {sc}: signals, times")


def slides(report):
    r = subprocess.run([args.faultline, "show", "--json", report], capture_output=True, text=True, env=ENV)
    doc = json.loads(r.stdout)
    return tuple(i["slide"] for i in doc["images"] if i["is_main"])


# ---- Reports of the crasher, with its symbols ----
reports = os.path.join(W, "reports")
made = crash_all(args.crasher, reports)
check(len({slides(f) for f in made["null_deref"]}) > 1, "the runs of one site loaded at different addresses")
# Damaged files: not a report, a report cut inside its header, an empty file.
some = made["null_deref"][0]
data = open(some, "rb").read()
open(os.path.join(reports, "garbage.flr"), "wb").write(b"\x00not a report at all" * 10)
open(os.path.join(reports, "cut.flr"), "wb").write(data[:40])
open(os.path.join(reports, "empty.flr"), "wb").write(b"")
damaged = {os.path.join(reports, n) for n in ("garbage.flr", "cut.flr", "empty.flr")}
# A writer's temporary file is not looked at.
open(os.path.join(reports, ".tmp-faultline-x.flr"), "wb").write(data[:100])

r = triage("--json", reports)
groups = json.loads(r.stdout) if r.returncode == 0 else []
check_groups(groups, made, "symbols")
bad = [g for g in groups if g["damaged"]]
check(len(bad) == 1 and set(bad[0]["reports"]) == damaged and bad[0]["count"] == 3,
      f"damaged reports counted and named: {bad}")
check(bad and bad == groups[-1:], "the damaged come last")

# Without libc's debug file (only its .dynsym: its internal frames unnamed) the groups are the same.
r = triage("--json", reports, env=dict(ENV, FAULTLINE_DEBUG_DIR=""))
plain = json.loads(r.stdout) if r.returncode == 0 else []
check([(g["signature"], g["count"]) for g in plain] == [(g["signature"], g["count"]) for g in groups],
      f"same signatures without libc6-dbg: {[g['signature'] for g in plain]}")

t = triage(reports)
total = sum(len(v) for v in made.values())
check(t.stdout.startswith(f"{total} reports in {len(SITES)} groups; 3 damaged\n"), f"text summary: {t.stdout[:100]!r}")
first = re.search(r"^#1  (\d+) reports  (.*)$", t.stdout, re.M)
check(first and first.group(1) == "4" and first.group(2).startswith("null_c | null_b"), f"text group 1: {first and first.group(0)}")
for f in damaged:
    check(f"{f}: " in t.stdout, f"text names damaged {f}")
check("crasher.c:" in t.stdout, "text stack has file:line")
# Files as operands; --frames 1.
r = triage("--json", *made["abort"], *made["trap"])
g = json.loads(r.stdout)
check([x["count"] for x in g] == [3, 3] and {x["signature"].split(" | ")[0] for x in g} == {"abort_b", "trap_b"},
      f"report files as operands: {[(x['signature'], x['count']) for x in g]}")
r = triage("--json", "--frames", "1", reports)
g = [x for x in json.loads(r.stdout) if not x["damaged"]]
check(all(" | " not in x["signature"] for x in g) and len(g) == len(SITES), "--frames 1")
r = subprocess.run([args.faultline, "triage", os.path.join(W, "missing")], capture_output=True, text=True, env=ENV)
check(r.returncode == 1 and "cannot read" in r.stderr, f"missing directory: {r.returncode} {r.stderr}")
# list, the same: a directory typed that does not exist is an error, an empty one is said.
r = subprocess.run([args.faultline, "list", os.path.join(W, "missing")], capture_output=True, text=True, env=ENV)
check(r.returncode == 1 and "cannot list" in r.stderr and "No such file" in r.stderr,
      f"list, missing directory: {r.returncode} {r.stderr.strip()}")
os.makedirs(os.path.join(W, "empty"), exist_ok=True)
r = subprocess.run([args.faultline, "list", os.path.join(W, "empty")], capture_output=True, text=True, env=ENV)
check(r.returncode == 0 and r.stdout == "" and "no reports in" in r.stderr,
      f"list, empty directory: {r.returncode} {r.stdout!r} {r.stderr.strip()}")

# ---- A stripped crasher: no names for its frames, image+offset keys, the same grouping ----
stripped = os.path.join(W, "crasher-stripped")
subprocess.run(["strip", "-o", stripped, args.crasher], check=True)
made_s = crash_all(stripped, os.path.join(W, "reports-stripped"))
r = triage("--json", os.path.join(W, "reports-stripped"))
groups = json.loads(r.stdout) if r.returncode == 0 else []
check_groups(groups, made_s, "stripped", names=False)
check(all(g["signature"].split(" | ")[0].startswith("crasher-stripped+0x") for g in groups
          if set(g["reports"]) & set(made_s["null_deref"])), "stripped: image+offset keys")

# ---- Progress bar, when stderr is a terminal and there are many reports ----
many = os.path.join(W, "many")
os.makedirs(many)
for i in range(220):
    shutil.copy(made["trap"][i % 3], os.path.join(many, f"r{i:03}.flr"))
master, slave = pty.openpty()
p = subprocess.Popen([args.faultline, "triage", many], stdout=subprocess.PIPE, stderr=slave, env=ENV)
os.close(slave)
err = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    err += chunk
out = p.communicate()[0].decode()
os.close(master)
check(b"triage: [" in err and b"100%  220/220" in err, f"progress bar on a terminal: {err[-200:]!r}")
check(out.startswith("220 reports in 1 group; 0 damaged"), f"many: {out[:80]!r}")
r = triage(many)
check("triage: [" not in r.stderr, "no progress bar when stderr is not a terminal")

tooltest.finish()
