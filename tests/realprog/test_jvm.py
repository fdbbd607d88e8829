#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The JVM under `faultline run` (docs/preload.md): it must still write its own crash log
# (hs_err_pid*.log: it chains to the action it finds before its own, which the library answers
# with SIG_DFL), its abort is reported with the fault its handler was handling, and the crashed
# thread crosses the Java frames (interpreted code in no image) by their frame records. Oracle:
# the JVM's own stack walk, the "Native frames" of its hs_err log: the same VM frames (libjvm.so
# offsets) and as many Java frames between them. Skipped (77) without java and javac.
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tooltest import check, finish, run, setup  # noqa: E402

args = setup("--preload")
java, javac = shutil.which("java"), shutil.which("javac")
if not java or not javac:
    print("SKIP: no java and javac (a JDK; not installed by make test)")
    sys.exit(77)
W = args.workdir
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jvm", "Crash.java")
r = subprocess.run([javac, "-nowarn", "-d", W, src], capture_output=True, text=True, timeout=300)
if r.returncode != 0:
    print(f"SKIP: javac failed: {r.stderr[-500:]}")
    sys.exit(77)
rd = os.path.join(W, "reports")
env = {k: v for k, v in os.environ.items() if not k.startswith(("JAVA_TOOL", "_JAVA", "JDK_JAVA"))}
# (The JVM ends a crash with abort() only while it may dump core; no core file is wanted here.)
r = subprocess.run([args.faultline, "run", "--preload", args.preload, "--report-dir", rd, "--",
                    java, "-Xmx64m", f"-XX:ErrorFile={W}/hs_err_%p.log", "-cp", W, "Crash"],
                   capture_output=True, text=True, timeout=300, cwd=W, env=env,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
logs = [os.path.join(W, f) for f in os.listdir(W) if f.startswith("hs_err_")]
reps = sorted(os.path.join(rd, f) for f in os.listdir(rd) if f.endswith(".flr")) \
    if os.path.isdir(rd) else []
check(r.returncode == 128 + signal.SIGABRT and len(logs) == 1 and len(reps) == 1,
      f"the JVM's own crash log ({len(logs)}), its abort ({r.returncode}) and one report "
      f"({len(reps)}): {r.stderr[-600:]!r}")
if not (logs and reps):
    finish()

# The JVM's own walk: the lines of "Native frames:" up to the blank line.
hs = open(logs[0], errors="replace").read()
m = re.search(r"^Native frames:.*?\n(.*?)\n\n", hs, re.S | re.M)
native = m.group(1).splitlines() if m else []
check(native, "hs_err has its native frames")

doc = json.loads(run([args.faultline, "show", "--json", reps[0]]).stdout)
isig = doc.get("interrupted_signal") or {}
check(doc["signal"]["name"] == "SIGABRT" and isig.get("name") == "SIGSEGV" and
      isig.get("address") == "0x10", f"SIGABRT while handling SIGSEGV at 0x10 ({isig})")
t = doc["threads"][0]
fr = t["frames"][isig.get("frame", 0):]
check(fr and (fr[0]["symbol"] or "").startswith("Unsafe_PutLong") and
      all(f["method"] != "scan" for f in t["frames"]),
      f"the interrupted frame is Unsafe_PutLong, nothing scanned "
      f"({[(f['symbol'], f['method']) for f in fr[:3]]})")

# Compare from Unsafe_PutLong on: a "V"/"C" line is a frame in an image (library+offset), a
# "j"/"J"/"v" line one in code the JVM wrote (no image in the report).
images = doc["images"]
ours = []
for f in fr:
    img = images[f["image"]] if f["image"] is not None else None
    ours.append((os.path.basename(img["path"]), int(f["pc"], 16) - int(img["start"], 16))
                if img else None)
theirs = []
for line in native:
    mm = re.match(r"^[VC]\s+\[([^+\]]+)\+0x([0-9a-f]+)\]", line)
    if mm:
        theirs.append((mm.group(1), int(mm.group(2), 16)))
    elif re.match(r"^[jJv]\s", line):
        theirs.append(None)
n = min(len(ours), len(theirs))
check(n >= 8 and ours[:n] == theirs[:n] and theirs.count(None) >= 3,
      f"the crashed thread matches the JVM's own walk frame by frame "
      f"(ours {ours[:n]}, the JVM's {theirs[:n]})")

g = json.loads(run([args.faultline, "triage", "--json", "--no-progress", rd]).stdout)
sig = g[0]["signature"] if g else ""
check(sig.startswith("Unsafe_PutLong"), f"the signature starts at the fault ({sig!r})")
finish()
