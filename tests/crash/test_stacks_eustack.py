#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fl_thread_backtrace against eu-stack (elfutils), frame by frame, on the same threads.

stacks_child walks each of its threads with fl_thread_backtrace, then sits still while this
script runs `eu-stack -p PID` on it. For every thread: frame 0 is the same pc, or the one just
before the system call instruction when the capture signal made the kernel restart the call
(read, futex: the restarted call is entered again at the same instruction, eu-stack then sees
the pc after it; nanosleep returns EINTR instead and is called again from the same place);
the busy thread's frame 0 lies in spin_inner (nm gives its size) for both; every later frame is
the same return address, and both end at the same outermost frame. The thread that blocks every
signal gets FL_EBLOCKED. Native only (eu-stack cannot attach to a process under qemu-user).
Usage: test_stacks_eustack.py STACKS_CHILD"""
import os, re, subprocess, sys, tempfile

FL_EBLOCKED = -15
SYSCALL_INSN = {"x86_64": 2, "aarch64": 4}[os.uname().machine]

def main():
    child_path = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as d:
        child = subprocess.Popen([child_path, d], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        fl, spin_addr = {}, None
        for line in child.stdout:
            w = line.split()
            if w[0] == "stack":
                fl[w[1]] = (int(w[2]), int(w[3]), [int(x, 16) for x in w[4:]])
            elif w[0] == "spin_inner":
                spin_addr = int(w[1], 16)
            elif w[0] == "ready":
                break
        eu = subprocess.run(["eu-stack", "-p", str(child.pid)], capture_output=True, text=True, timeout=120)
        child.stdin.close()
        child.wait(timeout=60)
    frames, tid = {}, None
    for line in eu.stdout.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            frames[tid] = []
        m = re.match(r"#(\d+)\s+0x([0-9a-f]+)\s*(.*)", line)
        if m and tid is not None:
            frames[tid].append((int(m.group(2), 16), m.group(3).strip()))
    size = None
    for line in subprocess.run(["nm", "-S", child_path], capture_output=True, text=True).stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[3] == "spin_inner":
            size = int(w[1], 16)

    def show(name, ours, theirs):
        out = [f"  {name}: fl_thread_backtrace / eu-stack"]
        for i in range(max(len(ours), len(theirs))):
            a = f"{ours[i]:#x}" if i < len(ours) else "-"
            b = f"{theirs[i][0]:#x} {theirs[i][1]}" if i < len(theirs) else "-"
            out.append(f"    #{i:<3} {a:>18}  {b}")
        return "\n".join(out)

    checked = 0
    for name, (tid, rc, pcs) in sorted(fl.items()):
        theirs = frames.get(tid, [])
        if name == "blocker":
            if rc != FL_EBLOCKED:
                failures.append(f"blocker: {rc}, wanted FL_EBLOCKED ({FL_EBLOCKED})")
            else:
                print(f"ok   - blocker: FL_EBLOCKED (eu-stack shows {len(theirs)} frames)")
            continue
        why = None
        if rc <= 0 or not theirs:
            why = f"fl_thread_backtrace {rc}, eu-stack {len(theirs)} frames"
        elif len(pcs) != len(theirs):
            why = f"{len(pcs)} frames, eu-stack {len(theirs)}"
        elif name == "spinner":
            inside = lambda pc: spin_addr <= pc < spin_addr + (size or 0)
            if not (size and inside(pcs[0]) and inside(theirs[0][0])):
                why = "frame 0 not in spin_inner for both"
        elif pcs[0] != theirs[0][0] and pcs[0] + SYSCALL_INSN != theirs[0][0]:
            why = "frame 0 differs (and is not the restarted system call)"
        if not why:
            for i in range(1, len(pcs)):
                if pcs[i] != theirs[i][0]:
                    why = f"frame {i} differs"
                    break
        if why:
            failures.append(f"{name}: {why}\n{show(name, pcs, theirs)}")
        else:
            checked += 1
            how = ("frame 0 in spin_inner" if name == "spinner" else
                   "frame 0 exact" if pcs[0] == theirs[0][0] else "frame 0 at the restarted system call")
            print(f"ok   - {name}: {len(pcs)} frames as eu-stack, {how} "
                  f"({', '.join(n for _, n in theirs[:3])}, ...)")
    if checked != 5:
        failures.append(f"{checked} of 5 walkable threads matched")
    for f in failures:
        print("FAIL - " + f)
    print(f"{checked + (1 if 'blocker' in fl and fl['blocker'][1] == FL_EBLOCKED else 0)} passed, {len(failures)} failed")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
