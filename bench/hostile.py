#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The CLI on a hostile report beside a normal one (issue 15): a 64 MiB "amplification" report
# (the sample report plus 6,544 threads of 4,096 frames, every thread well formed) against the
# sample report alone; for `show` (text and JSON), `list` and `triage`: wall time and peak
# memory (the child's maximum resident set, from wait4). Nothing is asserted on time: the exit
# status is non-zero only if a command could not run or the hostile report was not refused or
# marked truncated.
# Usage: bench/hostile.py [BUILD_DIR]   (default build; needs BUILD/tools/faultline and
#        BUILD/tests/tools/fl_mkreport)
import os
import shutil
import subprocess
import sys
import tempfile
import time

THREADS, FRAMES = 6544, 4096


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
from tooltest import field, varint  # noqa: E402


def thread(tid):
    # Compact frames (format 2): pc deltas (zigzag) of +0x20 and sp deltas of +16 (shift 4),
    # a byte each, methods two a byte: 10 KiB a thread, 64 MiB in all.
    pcs = varint(0x20 << 1) * FRAMES
    sps = varint(1 << 1) * FRAMES
    body = varint(1 << 3) + varint(tid)
    body += field(10, 2, pcs) + field(11, 2, sps) + field(12, 2, b"\x22" * ((FRAMES + 1) // 2))
    body += varint(13 << 3) + varint(4)
    return field(5, 2, body)


def run(cmd):
    """(seconds, peak RSS in MiB, exit status, first line of stderr)"""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return (time.monotonic() - t0, ru.ru_maxrss / 1024.0, p.returncode,
            err.decode(errors="replace").strip().splitlines()[:1])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    cli = os.path.join(build, "tools/faultline")
    mk = os.path.join(build, "tests/tools/fl_mkreport")
    tmp = tempfile.mkdtemp(prefix="fl-hostile-")
    try:
        ndir, hdir = os.path.join(tmp, "normal"), os.path.join(tmp, "hostile")
        os.mkdir(ndir)
        os.mkdir(hdir)
        normal = subprocess.run([mk, ndir], check=True, capture_output=True,
                                text=True).stdout.strip()
        data = open(normal, "rb").read()
        one = thread(1000)
        hostile = os.path.join(hdir, os.path.basename(normal))
        with open(hostile, "wb") as f:
            f.write(data)
            for i in range(THREADS):
                f.write(one)
        size = os.path.getsize(hostile)
        print(f"normal report: {len(data)} bytes; hostile: {size} bytes "
              f"({size / 2**20:.1f} MiB: the sample plus {THREADS} threads x {FRAMES} frames)")
        print()
        print("| command | report | seconds | peak MiB | exit | stderr |")
        print("|---|---|---:|---:|---:|---|")
        bad = 0
        for name, args in (("show", ["show"]), ("show --json", ["show", "--json"]),
                           ("list", ["list"]), ("triage", ["triage", "--no-progress"])):
            for kind, path, d in (("normal", normal, ndir), ("hostile", hostile, hdir)):
                target = d if name in ("list", "triage") else path
                secs, rss, rc, err = run([cli] + args + [target])
                print(f"| `faultline {name}` | {kind} | {secs:.2f} | {rss:.0f} | {rc} | "
                      f"{err[0][:80] if err else ''} |")
                if kind == "hostile" and rc == 0 and name == "show":
                    # (through a file: the output held here would count in the next child's
                    # peak, which starts as a copy of this process)
                    with open(os.path.join(tmp, "out.txt"), "wb") as f:
                        subprocess.run([cli, "show", path], stdout=f, check=False)
                    if subprocess.run(["grep", "-q", "reader limit reached",
                                       os.path.join(tmp, "out.txt")]).returncode != 0:
                        print("hostile report shown without a limit note", file=sys.stderr)
                        bad = 1
                if kind == "normal" and rc != 0:
                    bad = 1
        return bad
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
