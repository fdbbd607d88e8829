# SPDX-License-Identifier: MIT
# Runs inside gdb (gdb -batch -x gdb_oracle.py): the oracle's side of tests/realprog (README.md).
# RP_MODE=dump: every thread of the program or core gdb was given, as JSON in RP_JSON.
# RP_MODE=hold: gdb is attached to a running program (-p PID); it passes every signal on, stops it
# at RP_BREAK (where faultline is about to release the threads it parked), dumps every thread
# there, writes a core of that moment (gcore RP_GCORE) and detaches, so that the program then
# dies as it would have. RP_ARMED is created once the breakpoint is set; the outcome is in
# RP_JSON: {"stopped": bool, "error": str, "threads": [...]}.
import json
import os

import gdb

TYPES = {gdb.NORMAL_FRAME: "NORMAL", gdb.INLINE_FRAME: "INLINE", gdb.TAILCALL_FRAME: "TAILCALL",
         gdb.SIGTRAMP_FRAME: "SIGTRAMP", gdb.DUMMY_FRAME: "DUMMY", gdb.ARCH_FRAME: "ARCH",
         gdb.SENTINEL_FRAME: "SENTINEL"}
MAX_FRAMES = 100000  # a runaway unwind ends here (the deep scenarios have about 2,000)


def threads():
    """Every thread: its LWP and each frame's pc, gdb frame type and function name, innermost
    first. A frame's pc is gdb's: the resume address (for frames past 0 a return address)."""
    out = []
    for inf in gdb.inferiors():
        for th in sorted(inf.threads(), key=lambda t: t.num):
            th.switch()
            frames, error, last = [], None, None
            try:
                f = gdb.newest_frame()
                while f is not None and len(frames) < MAX_FRAMES:
                    frames.append({"pc": f.pc(), "type": TYPES.get(f.type(), str(f.type())),
                                   "name": f.name()})
                    last, f = f, f.older()
                if last is not None and last.unwind_stop_reason() not in (
                        gdb.FRAME_UNWIND_OUTERMOST, gdb.FRAME_UNWIND_NO_REASON):
                    error = "unwind stopped: " + gdb.frame_stop_reason_string(
                        last.unwind_stop_reason())
            except gdb.error as e:
                error = str(e)
            out.append({"lwp": th.ptid[1], "frames": frames, "error": error})
    return out


def write(doc):
    with open(os.environ["RP_JSON"], "w") as f:
        json.dump(doc, f)


def hold():
    gdb.execute("set confirm off")
    gdb.execute("handle all nostop noprint pass")
    bp = gdb.Breakpoint(os.environ["RP_BREAK"], internal=True)
    if bp.pending:
        write({"stopped": False, "error": "no breakpoint location for " + os.environ["RP_BREAK"]})
        return
    open(os.environ["RP_ARMED"], "w").close()
    gdb.execute("continue")
    th = gdb.selected_thread()
    if th is None or not th.is_valid() or bp.hit_count == 0:
        write({"stopped": False, "error": "the program did not reach " + os.environ["RP_BREAK"]})
        return
    doc = {"stopped": True, "error": None, "threads": threads()}
    gdb.execute("gcore " + os.environ["RP_GCORE"], to_string=True)
    write(doc)
    gdb.execute("detach")


gdb.execute("set pagination off")
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
gdb.execute("set backtrace limit unlimited")
try:
    if os.environ["RP_MODE"] == "hold":
        hold()
    else:
        write({"threads": threads()})
except Exception as e:  # noqa: BLE001 - any failure is the test's to report, not gdb's
    write({"stopped": False, "error": f"{type(e).__name__}: {e}"})
