# SPDX-License-Identifier: MIT
# `faultline unwind STATE` (docs/unwind-state.md). Oracle: gdb. A program built here (with and
# without frame pointers, -O0 and -O2) is stopped by gdb in a function 20 calls deep; gdb's
# registers, the stack bytes and the loaded images (executable, libc, ld.so at their load
# addresses) become a state file, and faultline's walk of it must give gdb's frames, pc by pc,
# and gdb's callee-saved registers at each frame where the walk knows them.
# Then hostile state files: each is refused with a message naming the line and column, never a
# hang (a FIFO named as the state or as a memory file) or a crash.
import json
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import tooltest as t  # noqa: E402

args = t.setup("--cc", "--source")
work = args.workdir

GDB_SCRIPT = r'''
import gdb, json
gdb.execute("break leaf")
gdb.execute("run 20 > /dev/null")
regs = {}
for name in ["rax","rbx","rcx","rdx","rsi","rdi","rbp","rsp","r8","r9","r10","r11","r12","r13","r14","r15","rip"]:
    regs[name] = hex(int(gdb.parse_and_eval("$" + name)) & 0xffffffffffffffff)
frames, saved = [], []
f = gdb.newest_frame()
while f is not None and len(frames) < 100:
    if f.type() != gdb.INLINE_FRAME:  # gdb shows inlined calls as frames of their own
        frames.append(hex(f.pc()))
        known = {}
        for name in ["rbx", "rbp", "r12", "r13", "r14", "r15"]:
            try:
                v = f.read_register(name)
                if not v.is_optimized_out:
                    known[name] = hex(int(v) & 0xffffffffffffffff)
            except Exception:
                pass
        saved.append(known)
    f = f.older()
maps = gdb.execute("info proc mappings", to_string=True)
sp = int(regs["rsp"], 16)
for line in maps.splitlines():
    p = line.split()
    if p and p[-1] == "[stack]":
        lo, hi = int(p[0], 16), int(p[1], 16)
start = sp & ~0xfff
open(STACK, "wb").write(bytes(gdb.selected_inferior().read_memory(start, hi - start)))
out = {"registers": regs, "frames": frames, "saved": saved, "maps": maps, "stack_start": start}
open(OUT, "w").write(json.dumps(out))
'''


def gdb_state(exe, name):
    out = os.path.join(work, name + ".gdb.json")
    script = os.path.join(work, name + ".py")
    with open(script, "w") as f:
        f.write("OUT = %r\nSTACK = %r\n" % (out, os.path.join(work, name + ".stack.bin")) + GDB_SCRIPT)
    t.run(["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex",
           "set startup-with-shell off", "-x", script, exe], timeout=120)
    g = json.load(open(out))
    images, stack = {}, None
    for line in g["maps"].splitlines():
        p = line.split()
        if len(p) < 5 or not p[0].startswith("0x"):
            continue
        lo, hi, off = int(p[0], 16), int(p[1], 16), int(p[3], 16)
        path = p[-1] if len(p) >= 6 else ""
        if path.startswith("/") and off == 0 and path not in images:
            images[path] = lo
        if path == "[stack]":
            stack = (lo, hi)
    return g, images, stack


def make_state(exe, name):
    g, images, stack = gdb_state(exe, name)
    sp = int(g["registers"]["rsp"], 16)
    lo, hi = stack
    stack_file = os.path.join(work, name + ".stack.bin")
    start = g["stack_start"]
    state = {"faultline_unwind_state": 1, "arch": "x86_64", "registers": g["registers"],
             "stack": {"low": hex(lo), "high": hex(hi)},
             "memory": [{"address": hex(start), "file": os.path.basename(stack_file)}],
             "images": [{"path": p, "load_address": hex(a)} for p, a in images.items()]}
    path = os.path.join(work, name + ".state.json")
    json.dump(state, open(path, "w"), indent=1)
    return path, g["frames"], g["saved"]


for flags in (["-O0", "-fno-omit-frame-pointer"], ["-O2", "-fomit-frame-pointer"]):
    name = "deep" + "".join(flags).replace("-", "_")
    exe = os.path.join(work, name)
    t.run([args.cc, "-g", *flags, "-o", exe, args.source])
    path, want, want_saved = make_state(exe, name)
    r = t.run([args.faultline, "unwind", "--format", "json", path], check_rc=False, timeout=60)
    if not t.check(r.returncode == 0, f"{name}: unwind exits 0 ({r.stderr.strip()})"):
        continue
    doc = json.loads(r.stdout)
    got = [f["pc"] for f in doc["threads"][0]["frames"]]
    n = len(want)
    t.check(got[:n] == want, f"{name}: frames equal gdb's ({n}): want {want} got {got}")
    t.check(any(f.get("symbol") and "level" in f["symbol"] for f in doc["threads"][0]["frames"]),
            f"{name}: frames symbolized from the images")
    # The callee-saved registers faultline's walk knows at each frame equal gdb's there.
    compared = wrong = 0
    for i, f in enumerate(doc["threads"][0]["frames"][:n]):
        for reg, value in f.get("registers", {}).items():
            if reg in want_saved[i]:
                compared += 1
                if value != want_saved[i][reg]:
                    wrong += 1
                    print(f"{name}: frame {i} {reg}: faultline {value}, gdb {want_saved[i][reg]}")
    t.check(compared >= n and wrong == 0,
            f"{name}: callee-saved registers equal gdb's ({compared} compared, {wrong} differ)")
    print(f"{name}: {len(got)} frames, gdb {n}: {'same' if got[:n] == want else 'DIFFERENT'}; "
          f"{compared} callee-saved register values compared, {wrong} differ")

# Hostile states: refused with a message, quickly.
bad = {
    "syntax": ('{"faultline_unwind_state": 1,\n "arch": }', "line 2, column"),
    "unknown_key": ('{"faultline_unwind_state": 1, "arch": "x86_64", "bogus": 1}', "unknown field"),
    "version": ('{"faultline_unwind_state": 2, "arch": "x86_64"}', "not 1"),
    "arch": ('{"faultline_unwind_state": 1, "arch": "arm64", "registers": {}}', "arm64"),
    "no_pc": ('{"faultline_unwind_state": 1, "arch": "x86_64", "registers": {"rsp": "0x10"}}', "pc and sp"),
    "reg": ('{"faultline_unwind_state": 1, "arch": "x86_64", "registers": {"x0": "0x1"}}', "no register"),
    "number": ('{"faultline_unwind_state": 1, "arch": "x86_64", "registers": {"rip": "0x1zz"}}', "0x"),
    "overlap": ('{"faultline_unwind_state": 1, "arch": "x86_64", "registers": {"rip": "0x1", "rsp": "0x1000"},'
                ' "memory": [{"address": "0x1000", "hex": "00112233"}, {"address": "0x1002", "hex": "00"}]}',
                "overlap"),
    "deep": ("[" * 100 + "]" * 100, "nested too deeply"),
    "control": ('{"faultline_unwind_state": 1, "arch": "x86_64\x1b[31m"}', "control character"),
    "fifo_memory": ('{"faultline_unwind_state": 1, "arch": "x86_64", "registers": {"rip": "0x1", "rsp": "0x8"},'
                    ' "memory": [{"address": "0x0", "file": "fifo"}]}', "not a regular file"),
    "fifo_image": ('{"faultline_unwind_state": 1, "arch": "x86_64", "registers": {"rip": "0x1", "rsp": "0x8"},'
                   ' "images": [{"path": "fifo", "load_address": "0x1000"}]}', "not a regular file"),
}
fifo = os.path.join(work, "fifo")
os.mkfifo(fifo)
for name, (text, want) in bad.items():
    p = os.path.join(work, "bad_" + name + ".json")
    open(p, "w").write(text)
    r = t.run([args.faultline, "unwind", p], check_rc=False, timeout=30)
    t.check(r.returncode == 1 and want in r.stderr and "\x1b" not in r.stderr,
            f"bad state {name}: exit 1 with '{want}' (got {r.returncode}: {r.stderr.strip()!r})")
r = t.run([args.faultline, "unwind", fifo], check_rc=False, timeout=30)
t.check(r.returncode == 1 and "not a regular file" in r.stderr, f"a FIFO as the state: {r.stderr.strip()}")
t.finish()
