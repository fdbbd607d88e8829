# SPDX-License-Identifier: MIT
# What the CLI tests share: their arguments and an emptied work directory, check() with the
# closing summary, run(), and varint()/field() to write protobuf fields (reports made by hand).
import argparse
import os
import shutil
import subprocess
import sys

_count = {"passed": 0, "failed": 0}


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wire, payload):
    """Field num of wire type wire (0 varint: payload already encoded; 2 length-delimited)."""
    key = varint(num << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def setup(*options, optional=()):
    """Parses --faultline, the given required options, the optional ones (None when absent) and
    --workdir; empties the work directory."""
    ap = argparse.ArgumentParser()
    for name in ("--faultline", *options, "--workdir"):
        ap.add_argument(name, required=True)
    for name in optional:
        ap.add_argument(name)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    return args


def check(cond, what):
    _count["passed" if cond else "failed"] += 1
    if not cond:
        print("FAIL:", what, flush=True)
    return cond


def run(cmd, check_rc=True, **kw):
    """Runs cmd capturing text output; a failure ends the test unless check_rc is False."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check_rc and r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return r


def crash(crasher, scenario, d, timeout=120):
    """Runs `crasher SCENARIO d` (the integration crasher); checks it died of a signal leaving one
    report in d, and returns that report's path (None if not)."""
    os.makedirs(d, exist_ok=True)
    before = set(os.listdir(d))
    r = subprocess.run([crasher, scenario, d], capture_output=True, timeout=timeout)
    new = [f for f in set(os.listdir(d)) - before if f.endswith(".flr")]
    check(r.returncode < 0 and len(new) == 1, f"{scenario}: died of a signal ({r.returncode}), one report {new}")
    return os.path.join(d, new[0]) if new else None


def stripped_copy(binary, d):
    """binary stripped into directory d, with its debug file d/NAME.debug named by its
    .gnu_debuglink: (stripped path, debug path)."""
    os.makedirs(d, exist_ok=True)
    name = os.path.basename(binary)
    stripped, debug = os.path.join(d, name), os.path.join(d, name + ".debug")
    run(["objcopy", "--only-keep-debug", binary, debug])
    run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + debug, binary, stripped])
    return stripped, debug


def terminal_unsafe(out):
    """What in the bytes out could drive a terminal, or None: anything that is not strict UTF-8
    (a raw 0x9b is CSI to a terminal taking 8-bit controls), C0 controls but tab and newline,
    DEL, C1 controls (U+0080..U+009F). Python's decoder is the oracle, not the cleaner."""
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at {e.start}: {out[max(0, e.start - 30):e.start + 30]!r}"
    for i, ch in enumerate(text):
        if (ord(ch) < 0x20 and ch not in "\t\n") or 0x7f <= ord(ch) <= 0x9f:
            return f"U+{ord(ch):04X} at {i}: {text[max(0, i - 30):i + 30]!r}"
    return None


def nm_range(binary, sym):
    """[start, end) of sym in binary, from an nm that reads its architecture (llvm-nm first)."""
    nm = next((n for n in ("llvm-nm-14", "llvm-nm", "nm") if shutil.which(n)), "nm")
    for line in run([nm, "-S", "--defined-only", binary]).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == sym:
            return int(f[0], 16), int(f[0], 16) + int(f[1], 16)
    sys.exit(f"{nm}: no {sym} in {binary}")


def crashed_pc0(doc):
    """The crashed thread's frame 0 as an address in the main executable's file (the report's
    pc less the executable's slide), or None when threads[0] is not the crashed one."""
    t = doc["threads"][0]
    main_img = next(i for i in doc["images"] if i["is_main"])
    return int(t["frames"][0]["pc"], 16) - int(main_img["slide"], 16) if t["crashed"] else None


def crash_site(faultline, rep):
    """The `Crash Site:` row of `faultline show`'s text view of report rep ("" if none)."""
    out = run([faultline, "show", rep]).stdout
    return next((l.split(":", 1)[1].strip() for l in out.splitlines()
                 if l.startswith("Crash Site:")), "")


def finish():
    print(f"{_count['passed']} passed, {_count['failed']} failed")
    sys.exit(1 if _count["failed"] else 0)
