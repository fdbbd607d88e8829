#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The Darwin emulation harness (issue 13): runs zig-built Mach-O test programs in Unicorn and
# checks faultline's walker against the true call chain.
#
# For each program of build.sh (x86_64 and arm64; frame pointers kept or omitted; -O0, -O2, -Os)
# and each case of cases.c, this:
#   1. maps the Mach-O at a non-zero slide, applies its rebase opcodes (LC_DYLD_INFO_ONLY, what
#      zig 0.11 emits; anything else - chained fixups, binds to a library, old-style local
#      relocations - is refused loudly), maps a 1 MiB stack and calls emu_main(case) as a
#      thread's first frame would be (return address 0);
#   2. runs it until the deliberate fault (an unmapped read or fetch) or, for the interruption
#      cases, until a chosen instruction of int_target (a snapshot suspends threads anywhere),
#      tracing every call and return: the true chain is, for each live call, the return address,
#      the caller's sp and the caller's callee-saved registers at the call (what it has again
#      when the callee returns); frame 0's registers are the faulting ones;
#   3. mode (a): writes the state (docs/unwind-state.md: registers, the stack as a file, the image
#      with its load address) and runs `faultline unwind --format json STATE` (for arm64 the
#      arm64 build's CLI under qemu-aarch64), comparing its frames (pc, sp, and each frame's
#      "registers") with the true chain;
#   4. mode (b): plays the kernel - hands the faulting registers to emu_walk (emu_walk.c, the
#      walker built for Darwin and linked into the program) on a stack of its own, reads back its
#      frames and compares them too, counting the instructions the emulator runs per frame (cold:
#      first walk; warm: the same walk again, the CFI row cache filled); then, uncounted, the
#      same two walks with fl_walk_env_t.frame_regs, whose registers are compared (compare_regs:
#      frame 0 all reported, later frames the callee-saved ones reported known);
#   4b. with --reference, the benchmark's reference: LLVM libunwind (emu_ref.c) walks the same
#      registers in the emulator, its instructions counted per frame the same way (never a
#      failure of the case: its chain is compared and summarized);
#   5. prints a table (pass/fail per mode; a failure names the first wrong frame), the encodings
#      (llvm-objdump-14 --unwind-info, the independent oracle) of the functions each chain went
#      through, the coverage of every encoding kind, and the instruction counts, also written as
#      JSON (--bench).
# Exit status: 0 every case that ran passed, 1 a failure or an error, 77 unicorn cannot be
# imported. A mode that cannot run (no CLI for arm64) is reported "not run: <why>", and fails
# the run only with --strict.
#
# Usage: emu.py --zig ZIG --out DIR [--objdump llvm-objdump-14] [--cli-x86_64 CLI]
#               [--cli-arm64 CLI] [--qemu-arm64 'qemu-aarch64 -L /usr/aarch64-linux-gnu']
#               [--cmd-x86_64 TEMPLATE] [--cmd-arm64 TEMPLATE] [--arch x86_64,arm64]
#               [--builds fp-O2,...] [--cases leaf,...] [--modes a,b] [--bench FILE] [--strict]
#               [--reference] [--profile] [--sweep]
#               [--no-build] [--verbose]
# A command TEMPLATE is split like a shell line; {state} is replaced by the state file's path (or
# the path is appended). Environment: FL_EMU_CMD_X86_64, FL_EMU_CMD_ARM64 override the commands.
# Debian's /usr/bin/python3 sees python3-unicorn and python3-capstone (a pyenv python does not).
import argparse
import bisect
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import time

try:
    import unicorn as U
except ImportError:
    print("darwin_emu: SKIP: python3 module 'unicorn' not found (Debian: apt-get install "
          "python3-unicorn python3-capstone; scripts/setup-deps.sh installs them; use "
          "/usr/bin/python3)", file=sys.stderr)
    sys.exit(77)
from unicorn import arm64_const as A64
from unicorn import x86_const as X86

try:
    import capstone
except ImportError:
    print("darwin_emu: python3 module 'capstone' not found (apt-get install python3-capstone)",
          file=sys.stderr)
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))



def set_call(uc, arch, sp, ret, arg):
    """Registers as a call of a one-argument function leaves them: the return address `ret` on
    the stack below sp (x86_64) or in lr (arm64), no frame pointer, the argument in rdi / x0."""
    if arch == "x86_64":
        sp -= 8
        uc.mem_write(sp, struct.pack("<Q", ret))
        uc.reg_write(X86.UC_X86_REG_RSP, sp)
        uc.reg_write(X86.UC_X86_REG_RBP, 0)
        uc.reg_write(X86.UC_X86_REG_RDI, arg)
    else:
        uc.reg_write(A64.UC_ARM64_REG_SP, sp)
        uc.reg_write(A64.UC_ARM64_REG_FP, 0)
        uc.reg_write(A64.UC_ARM64_REG_LR, ret)
        uc.reg_write(A64.UC_ARM64_REG_X0, arg)

class HarnessError(Exception):
    """Something the harness cannot do or refuses (not a walker failure)."""


# ---------------------------------------------------------------------------------------------
# Mach-O

LC_SEGMENT_64 = 0x19
LC_SYMTAB = 0x2
LC_DYSYMTAB = 0xB
LC_DYLD_INFO = 0x22
LC_DYLD_INFO_ONLY = 0x80000022
LC_MAIN = 0x80000028
LC_FUNCTION_STARTS = 0x26
LC_DYLD_CHAINED_FIXUPS = 0x80000034
CPU_X86_64 = 0x01000007
CPU_ARM64 = 0x0100000C


def uleb(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf):
            raise HarnessError("truncated ULEB128")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def sleb(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            if b & 0x40:
                v -= 1 << shift
            return v, i


class MachO:
    """The parts of a 64-bit Mach-O executable the loader and the oracle need."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.data = data = f.read()
        magic, self.cputype, _, self.filetype, ncmds, sizeofcmds, _, _ = struct.unpack_from(
            "<IiiIIIII", data, 0)
        if magic != 0xFEEDFACF:
            raise HarnessError(f"{path}: not a thin 64-bit Mach-O (magic {magic:#x})")
        self.cputype &= 0xFFFFFFFF
        self.segments = []  # dicts: name, vmaddr, vmsize, fileoff, filesize, initprot, sections
        self.dyld_info = None
        self.symtab = None
        self.entryoff = None
        self.function_starts = []
        self.nlocrel = 0
        off = 32
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<II", data, off)
            if cmd == LC_SEGMENT_64:
                name = data[off + 8:off + 24].rstrip(b"\0").decode()
                vmaddr, vmsize, fileoff, filesize, _, initprot, nsects, _ = struct.unpack_from(
                    "<QQQQiiII", data, off + 24)
                sects = []
                for k in range(nsects):
                    s = off + 72 + 80 * k
                    sname = data[s:s + 16].rstrip(b"\0").decode()
                    addr, ssize, soff = struct.unpack_from("<QQI", data, s + 32)
                    sects.append({"name": sname, "addr": addr, "size": ssize, "offset": soff})
                self.segments.append({"name": name, "vmaddr": vmaddr, "vmsize": vmsize,
                                      "fileoff": fileoff, "filesize": filesize,
                                      "initprot": initprot, "sections": sects})
            elif cmd in (LC_DYLD_INFO, LC_DYLD_INFO_ONLY):
                self.dyld_info = struct.unpack_from("<10I", data, off + 8)
            elif cmd == LC_SYMTAB:
                self.symtab = struct.unpack_from("<4I", data, off + 8)
            elif cmd == LC_DYSYMTAB:
                self.nlocrel = struct.unpack_from("<18I", data, off + 8)[17]
            elif cmd == LC_MAIN:
                self.entryoff = struct.unpack_from("<Q", data, off + 8)[0]
            elif cmd == LC_FUNCTION_STARTS:
                foff, fsize = struct.unpack_from("<II", data, off + 8)
                self._function_starts(foff, fsize)
            elif cmd == LC_DYLD_CHAINED_FIXUPS:
                raise HarnessError(f"{path}: LC_DYLD_CHAINED_FIXUPS: chained fixups are not "
                                   "handled (zig 0.11 emits rebase opcodes); teach emu.py")
            off += size
        self.text = self.segment("__TEXT")
        if not self.text:
            raise HarnessError(f"{path}: no __TEXT segment")
        self._symbols()

    def segment(self, name):
        return next((s for s in self.segments if s["name"] == name), None)

    def section(self, seg, name):
        s = self.segment(seg)
        return next((x for x in s["sections"] if x["name"] == name), None) if s else None

    def _function_starts(self, off, size):
        addr = self.segment("__TEXT")["vmaddr"] if self.segment("__TEXT") else 0
        i, end = off, off + size
        while i < end:
            delta, i = uleb(self.data, i)
            if delta == 0:
                break
            addr += delta
            self.function_starts.append(addr)

    def _symbols(self):
        self.symbols = {}  # name (with the leading '_') -> unslid address
        funcs = []
        if self.symtab:
            symoff, nsyms, stroff, strsize = self.symtab
            text = self.section("__TEXT", "__text")
            for k in range(nsyms):
                strx, ntype, _, _, value = struct.unpack_from("<IBBHQ", self.data, symoff + 16 * k)
                if ntype & 0xE0 or ntype & 0x0E != 0x0E:
                    continue
                end = self.data.index(b"\0", stroff + strx)
                name = self.data[stroff + strx:end].decode(errors="replace")
                self.symbols.setdefault(name, value)
                if text and text["addr"] <= value < text["addr"] + text["size"]:
                    funcs.append((value, name))
        funcs.sort()
        self.func_addrs = [a for a, _ in funcs]
        self.func_names = [n for _, n in funcs]

    def symbolize(self, vmaddr):
        """'name+0xoff' for an unslid address in __text, or None."""
        i = bisect.bisect_right(self.func_addrs, vmaddr) - 1
        if i < 0:
            return None
        return f"{self.func_names[i].lstrip('_')}+{vmaddr - self.func_addrs[i]:#x}"

    def function_of(self, vmaddr):
        """(start, end, name) of the function holding vmaddr (symbols and LC_FUNCTION_STARTS)."""
        starts = sorted(set(self.function_starts) | set(self.func_addrs))
        i = bisect.bisect_right(starts, vmaddr) - 1
        if i < 0:
            return None
        text = self.section("__TEXT", "__text")
        end = starts[i + 1] if i + 1 < len(starts) else text["addr"] + text["size"]
        k = bisect.bisect_right(self.func_addrs, vmaddr) - 1
        name = self.func_names[k].lstrip("_") if k >= 0 and self.func_addrs[k] == starts[i] \
            else f"func_{starts[i]:x}"
        return starts[i], end, name

    def linkedit(self, off, size):
        return self.data[off:off + size]

    def rebases(self):
        """Unslid addresses of the pointers the rebase opcodes name (REBASE_TYPE_POINTER only)."""
        if not self.dyld_info:
            if self.nlocrel:
                raise HarnessError(f"{self.path}: local relocations without LC_DYLD_INFO")
            return []
        if self.nlocrel:
            raise HarnessError(f"{self.path}: LC_DYSYMTAB local relocations: not handled")
        roff, rsize = self.dyld_info[0], self.dyld_info[1]
        ops = self.linkedit(roff, rsize)
        out, i, seg, addr, typ = [], 0, None, 0, 0

        def do(n, skip=0):
            nonlocal addr
            if typ != 1:
                raise HarnessError(f"{self.path}: rebase type {typ}: only pointers handled")
            for _ in range(n):
                out.append(addr)
                addr += 8 + skip

        while i < len(ops):
            b = ops[i]
            i += 1
            op, imm = b & 0xF0, b & 0x0F
            if op == 0x00:  # DONE
                break
            elif op == 0x10:  # SET_TYPE_IMM
                typ = imm
            elif op == 0x20:  # SET_SEGMENT_AND_OFFSET_ULEB
                seg = self.segments[imm]
                v, i = uleb(ops, i)
                addr = seg["vmaddr"] + v
            elif op == 0x30:  # ADD_ADDR_ULEB
                v, i = uleb(ops, i)
                addr += v
            elif op == 0x40:  # ADD_ADDR_IMM_SCALED
                addr += imm * 8
            elif op == 0x50:  # DO_REBASE_IMM_TIMES
                do(imm)
            elif op == 0x60:  # DO_REBASE_ULEB_TIMES
                v, i = uleb(ops, i)
                do(v)
            elif op == 0x70:  # DO_REBASE_ADD_ADDR_ULEB
                v, i = uleb(ops, i)
                do(1, v)
            elif op == 0x80:  # DO_REBASE_ULEB_TIMES_SKIPPING_ULEB
                n, i = uleb(ops, i)
                s, i = uleb(ops, i)
                do(n, s)
            else:
                raise HarnessError(f"{self.path}: unknown rebase opcode {b:#x}")
        return out

    def binds(self):
        """Symbols the bind, weak-bind and lazy-bind opcodes name."""
        if not self.dyld_info:
            return []
        names = []
        for off, size in ((self.dyld_info[2], self.dyld_info[3]),
                          (self.dyld_info[4], self.dyld_info[5]),
                          (self.dyld_info[6], self.dyld_info[7])):
            ops, i = self.linkedit(off, size), 0
            while i < len(ops):
                b = ops[i]
                i += 1
                op = b & 0xF0
                if op == 0x40:  # SET_SYMBOL_TRAILING_FLAGS_IMM
                    end = ops.index(b"\0", i)
                    names.append(ops[i:end].decode(errors="replace"))
                    i = end + 1
                elif op in (0x20, 0x70, 0x80, 0xA0):  # ULEB operand(s)
                    _, i = uleb(ops, i)
                elif op == 0x60:
                    _, i = sleb(ops, i)
                elif op == 0xC0:
                    _, i = uleb(ops, i)
                    _, i = uleb(ops, i)
                elif op == 0xD0:
                    raise HarnessError(f"{self.path}: threaded binds: not handled")
        return sorted(set(names))


# ---------------------------------------------------------------------------------------------
# The oracle: llvm-objdump's view of __unwind_info

X86_KINDS = {0: "none", 1: "RBP_FRAME", 2: "STACK_IMMD", 3: "STACK_IND", 4: "DWARF"}
ARM64_KINDS = {0: "none", 2: "FRAMELESS", 3: "DWARF", 4: "FRAME"}


def encoding_kind(arch, enc):
    if enc is None:
        return "none"
    mode = (enc >> 24) & 0xF
    kinds = X86_KINDS if arch == "x86_64" else ARM64_KINDS
    kind = kinds.get(mode, f"mode{mode}")
    if arch == "arm64" and mode == 4 and enc & 0x1F:
        kind += "+pairs"  # x19..x28 pairs saved
    if arch == "arm64" and mode == 4 and enc & 0xF00:
        kind += "+d"
    return kind


class UnwindOracle:
    LINE = re.compile(r"function offset=(0x[0-9a-fA-F]+), encoding\[\d+\]=(0x[0-9a-fA-F]+)")

    def __init__(self, objdump, macho, arch):
        self.arch = arch
        try:
            out = subprocess.run([objdump, "--macho", "--unwind-info", macho.path],
                                 capture_output=True, text=True, timeout=60)
        except OSError as e:
            raise HarnessError(f"{objdump}: {e}") from e
        if out.returncode:
            raise HarnessError(f"{objdump} --unwind-info {macho.path}: {out.stderr.strip()}")
        base = macho.text["vmaddr"]
        entries = sorted((base + int(o, 16), int(e, 16)) for o, e in self.LINE.findall(out.stdout))
        if not entries:
            raise HarnessError(f"{objdump} printed no unwind entries for {macho.path}")
        self.starts = [s for s, _ in entries]
        self.encs = [e for _, e in entries]

    def encoding(self, vmaddr):
        """The encoding of the entry covering vmaddr (the last one starting at or below it;
        the table runs to the end of __text), or None below the first."""
        i = bisect.bisect_right(self.starts, vmaddr) - 1
        return self.encs[i] if i >= 0 else None

    def kind(self, vmaddr):
        return encoding_kind(self.arch, self.encoding(vmaddr))


# ---------------------------------------------------------------------------------------------
# The emulator

# Register names as faultline names them (frames/regs_names.c), in fl_regs_t order.
X86_NAMES = ["rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8", "r9", "r10", "r11",
             "r12", "r13", "r14", "r15", "rip", "rflags", "cs", "fs", "gs", "err", "trapno", "cr2"]
X86_UC = [X86.UC_X86_REG_RAX, X86.UC_X86_REG_RBX, X86.UC_X86_REG_RCX, X86.UC_X86_REG_RDX,
          X86.UC_X86_REG_RDI, X86.UC_X86_REG_RSI, X86.UC_X86_REG_RBP, X86.UC_X86_REG_RSP,
          X86.UC_X86_REG_R8, X86.UC_X86_REG_R9, X86.UC_X86_REG_R10, X86.UC_X86_REG_R11,
          X86.UC_X86_REG_R12, X86.UC_X86_REG_R13, X86.UC_X86_REG_R14, X86.UC_X86_REG_R15,
          X86.UC_X86_REG_RIP, X86.UC_X86_REG_EFLAGS]
ARM64_NAMES = [f"x{i}" for i in range(29)] + ["fp", "lr", "sp", "pc", "pstate"]
ARM64_UC = [getattr(A64, f"UC_ARM64_REG_X{i}") for i in range(29)] + [
    A64.UC_ARM64_REG_FP, A64.UC_ARM64_REG_LR, A64.UC_ARM64_REG_SP, A64.UC_ARM64_REG_PC,
    getattr(A64, "UC_ARM64_REG_PSTATE", A64.UC_ARM64_REG_NZCV)]
# The callee-saved registers (what a callee must give back to its caller unchanged), by
# faultline's names: (name, DWARF number, Unicorn register). fp (rbp, x29) is one of them.
CALLEE_SAVED = {
    "x86_64": [("rbx", 3, X86.UC_X86_REG_RBX), ("rbp", 6, X86.UC_X86_REG_RBP),
               ("r12", 12, X86.UC_X86_REG_R12), ("r13", 13, X86.UC_X86_REG_R13),
               ("r14", 14, X86.UC_X86_REG_R14), ("r15", 15, X86.UC_X86_REG_R15)],
    "arm64": [(f"x{i}", i, getattr(A64, f"UC_ARM64_REG_X{i}")) for i in range(19, 29)] +
             [("fp", 29, A64.UC_ARM64_REG_FP)],
}
# DWARF register numbers (fl_dwarf_regs_t) -> faultline's names (fl_dwarf_reg_name).
DWARF_NAMES = {
    "x86_64": ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp"] +
              [f"r{i}" for i in range(8, 16)] + ["rip"],
    "arm64": ARM64_NAMES[:31] + ["sp", "pc"],
}
PC_SP_NAMES = {"x86_64": ("rip", "rsp"), "arm64": ("pc", "sp")}
# What the callee-saved registers hold when emu_main starts (fp stays 0: the end of the frame
# pointer chain): values of their own, so that a register the walker carries from the wrong
# frame, or reads from the wrong slot, shows.
SEED = 0x5EED000000000000

STACK_HI = 0x7FF7BFF00000  # the top of the faulting thread's stack (macOS-like)
STACK_SIZE = 1 << 20
WALK_STACK = 0x600000000  # the walker's own stack (mode b), 512 KiB
WALK_STACK_SIZE = 512 << 10
ARGS = 0x610000000  # emu_walk_args_t (emu_walk.c)
ARGS_SIZE = 0x60000
MAGIC = 0x620000000  # mode (b): emu_walk returns here
SLIDE = {"x86_64": 0x2B4C000, "arm64": 0x3A58000}  # non-zero, page (16 KiB) aligned
FRAMES_MAX = 512
INSN_LIMIT = 20_000_000

# emu_walk_args_t (emu_walk.c, whose _Static_asserts check these offsets)
A_HEADER, A_PHASE, A_COUNT, A_FRAMES = 320, 368, 384, 456
A_PASSES, A_REG_COUNT, A_REG_FRAMES, A_FRAME_REGS = 37320, 37328, 37376, 61952
A_SIZE = 340480  # sizeof(emu_walk_args_t)
REF_ARGS = 0x630000000  # emu_ref_args_t (emu_ref.c): regs[40], header, image range, sections
R_PHASE, R_FRAMES = 384, 408  # ..., max; then phase, count, last, frames[512][2]
REF_ARGS_SIZE = 0x3000
assert A_SIZE <= ARGS_SIZE
DWARF_REGS = 33  # fl_dwarf_regs_t: r[33], valid
PASSES = 3  # frame pointers only; the crash path's walk, cold; the same, warm
WALKS = ("fp-only", "cold", "warm", "libunwind")  # the last: the reference (emu_ref.c)
REG_PASSES = 2  # passes 3, 4: as cold and warm, with env.frame_regs (emu_walk.c)
REG_WALKS = ("cold", "warm")
METHODS = {0: "unknown", 1: "context", 2: "cfi", 3: "fp", 4: "lr", 5: "scan"}


def page_round(v, page=0x1000):
    return (v + page - 1) & ~(page - 1)


class Program:
    """One built test program: the Mach-O, its oracle, its disassembly."""

    def __init__(self, arch, build, path, objdump):
        self.arch, self.build, self.path = arch, build, path
        self.m = MachO(path)
        want = CPU_X86_64 if arch == "x86_64" else CPU_ARM64
        if self.m.cputype != want:
            raise HarnessError(f"{path}: cputype {self.m.cputype:#x}, expected {arch}")
        bad = [b for b in self.m.binds() if b != "dyld_stub_binder"]
        if bad:
            raise HarnessError(f"{path}: binds {', '.join(bad)}: the program calls a library, "
                               "which cannot run here (no dyld)")
        if self.m.entryoff is not None and \
                self.m.text["vmaddr"] + self.m.entryoff != self.m.symbols.get("_emu_main"):
            raise HarnessError(f"{path}: LC_MAIN is not emu_main (build.sh links -e _emu_main)")
        self.rebase_addrs = self.m.rebases()
        self.oracle = UnwindOracle(objdump, self.m, arch)
        self.slide = SLIDE[arch]
        self.load = self.m.text["vmaddr"] + self.slide
        self.lo = min(s["vmaddr"] for s in self.m.segments if s["initprot"]) + self.slide
        self.hi = max(s["vmaddr"] + s["vmsize"] for s in self.m.segments if s["initprot"]) + \
            self.slide
        text = self.m.section("__TEXT", "__text")
        self.text_lo, self.text_hi = text["addr"] + self.slide, text["addr"] + text["size"] + \
            self.slide
        stubs = self.m.section("__TEXT", "__stubs")
        self.stubs = (stubs["addr"] + self.slide, stubs["addr"] + stubs["size"] + self.slide) \
            if stubs and stubs["size"] else None
        self._disassemble()

    def sym(self, name):
        v = self.m.symbols.get("_" + name)
        if v is None:
            raise HarnessError(f"{self.path}: no symbol _{name}")
        return v + self.slide

    def _disassemble(self):
        """Call and return instructions of every function (slid address -> 'call' or 'ret'),
        from function starts, and each function's instructions."""
        if self.arch == "x86_64":
            cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        else:
            cs = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
        cs.skipdata = True
        text = self.m.section("__TEXT", "__text")
        data = self.m.data[text["offset"]:text["offset"] + text["size"]]
        starts = sorted(set(self.m.function_starts) | set(self.m.func_addrs))
        starts = [s for s in starts if text["addr"] <= s < text["addr"] + text["size"]]
        self.kinds = {}
        self.insns = {}  # function start (slid) -> [(addr, size, mnemonic)]
        for k, s in enumerate(starts):
            e = starts[k + 1] if k + 1 < len(starts) else text["addr"] + text["size"]
            code = data[s - text["addr"]:e - text["addr"]]
            lst = []
            for insn in cs.disasm(code, s + self.slide):
                mn = insn.mnemonic
                lst.append((insn.address, insn.size, mn))
                if self.arch == "x86_64":
                    if mn.startswith("call"):
                        self.kinds[insn.address] = "call"
                    elif mn.startswith("ret"):
                        self.kinds[insn.address] = "ret"
                else:
                    if mn in ("bl", "blr", "blraa", "blraaz", "blrab", "blrabz"):
                        self.kinds[insn.address] = "call"
                    elif mn in ("ret", "retaa", "retab"):
                        self.kinds[insn.address] = "ret"
            self.insns[s + self.slide] = lst

    def symbolize(self, pc):
        return self.m.symbolize(pc - self.slide) or f"{pc:#x}"

    def encoding_at(self, lookup):
        """(function name, encoding, kind) for a slid lookup address."""
        f = self.m.function_of(lookup - self.slide)
        enc = self.oracle.encoding(lookup - self.slide)
        return (f[2] if f else "?"), enc, encoding_kind(self.arch, enc)


class Emulation:
    """One run of one case: Unicorn with the program mapped, the trace, the fault."""

    def __init__(self, prog):
        self.p = prog
        arch = prog.arch
        if arch == "x86_64":
            self.uc = U.Uc(U.UC_ARCH_X86, U.UC_MODE_64)
            self.PC, self.SP = X86.UC_X86_REG_RIP, X86.UC_X86_REG_RSP
        else:
            self.uc = U.Uc(U.UC_ARCH_ARM64, U.UC_MODE_ARM)
            self.PC, self.SP = A64.UC_ARM64_REG_PC, A64.UC_ARM64_REG_SP
        self._map_image()
        self.uc.mem_map(STACK_HI - STACK_SIZE, STACK_SIZE, U.UC_PROT_READ | U.UC_PROT_WRITE)
        self.fault = None

    def _map_image(self):
        p, uc = self.p, self.uc
        for s in p.m.segments:
            if not s["initprot"] or not s["vmsize"]:
                continue  # __PAGEZERO: left unmapped, so NULL faults
            addr = s["vmaddr"] + p.slide
            size = page_round(s["vmsize"])
            prot = s["initprot"] & 7
            uc.mem_map(addr, size, prot or U.UC_PROT_READ)
            n = min(s["filesize"], s["vmsize"])
            if n:
                uc.mem_write(addr, p.m.data[s["fileoff"]:s["fileoff"] + n])
        for a in p.rebase_addrs:  # dyld's rebase: every pointer moves by the slide
            v = struct.unpack("<Q", uc.mem_read(a + p.slide, 8))[0]
            uc.mem_write(a + p.slide, struct.pack("<Q", v + p.slide))

    def case_index(self, func):
        """emu_cases[] (rebased) holds func: its index. Also checks the rebase."""
        p = self.p
        table = p.sym("emu_cases")
        want = p.sym(func)
        for i in range(64):
            v = struct.unpack("<Q", self.uc.mem_read(table + 8 * i, 8))[0]
            if v == want:
                return i
            if not p.text_lo <= v < p.text_hi:
                break
        raise HarnessError(f"{p.path}: _{func} ({want:#x}) not in the rebased emu_cases table "
                           "(rebase wrong?)")

    def run(self, case_arg, stop=None):
        """Calls emu_main(case_arg) until a fault or until pc == stop. Returns the true chain
        [(pc, sp)] with frame 0 first, and sets self.regs, self.fault and self.truth: for each
        frame of the chain the registers unwinding to it must give, {name: value} (frame 0: all
        of the faulting registers; a caller: its callee-saved registers at its call
        instruction, which its callee gives back unchanged when it returns)."""
        uc, p = self.uc, self.p
        calls = []  # (return address, caller's sp, caller's callee-saved registers) per live call
        state = {"last": None, "n": 0, "stub": None}
        kinds = p.kinds
        saved = [r for _, _, r in CALLEE_SAVED[p.arch]]

        def on_code(uc_, addr, size, _):
            state["n"] += 1
            if addr == stop:
                return  # the interruption point: not executed
            state["last"] = addr
            k = kinds.get(addr)
            if k == "call":
                calls.append((addr + size, uc_.reg_read(self.SP),
                               tuple(uc_.reg_read(r) for r in saved)))
            elif k == "ret":
                if calls:
                    calls.pop()
                else:
                    state["returned"] = True

        def on_unmapped(uc_, access, addr, size, value, _):
            self.fault = {"access": {U.UC_MEM_READ_UNMAPPED: "read",
                                     U.UC_MEM_WRITE_UNMAPPED: "write",
                                     U.UC_MEM_FETCH_UNMAPPED: "fetch"}.get(access, str(access)),
                          "address": addr}
            return False

        h1 = uc.hook_add(U.UC_HOOK_CODE, on_code, begin=p.text_lo, end=p.text_hi - 1)
        h2 = uc.hook_add(U.UC_HOOK_MEM_UNMAPPED, on_unmapped)
        sp = STACK_HI - 0x100
        for name, dw, r in CALLEE_SAVED[p.arch]:
            if name not in ("rbp", "fp"):
                uc.reg_write(r, SEED | dw << 8)
        set_call(uc, p.arch, sp, 0, case_arg)  # emu_main's return address: none
        entry = p.sym("emu_main")
        err = None
        try:
            if stop is not None:
                uc.emu_start(entry, stop, count=INSN_LIMIT)
            else:
                uc.emu_start(entry, 0xFFFFFFFFFFFFFFFF, count=INSN_LIMIT)
        except U.UcError as e:
            err = e
        uc.hook_del(h1)
        uc.hook_del(h2)
        self.insns_run = state["n"]
        pc = uc.reg_read(self.PC)
        if stop is not None:
            if err is not None or pc != stop:
                raise HarnessError(f"did not reach the stop address {stop:#x} "
                                   f"({p.symbolize(stop)}): pc {pc:#x}, {err or 'stopped'}")
            self.fault = None
        else:
            if err is None:
                raise HarnessError(f"no fault: stopped at pc {pc:#x} after {state['n']} "
                                   "instructions")
            if err.errno not in (U.UC_ERR_READ_UNMAPPED, U.UC_ERR_WRITE_UNMAPPED,
                                 U.UC_ERR_FETCH_UNMAPPED):
                raise HarnessError(f"unexpected emulator error {err} at pc {pc:#x} "
                                   f"({p.symbolize(pc)})")
            if state.get("returned") or (not calls and self.fault and
                                         self.fault["access"] == "fetch"):
                raise HarnessError("emu_main returned: the case did not fault")
            if p.stubs and p.stubs[0] <= (state["last"] or 0) < p.stubs[1]:
                raise HarnessError("the program called a library stub")
            # A data fault leaves pc on the faulting instruction (not executed), the last one
            # the trace saw.
            if self.fault["access"] != "fetch" and pc != state["last"]:
                raise HarnessError(f"pc {pc:#x} after the fault is not the last instruction "
                                   f"traced ({state['last']:#x})")
        self.regs = self.read_regs()
        self.frames = [(pc, uc.reg_read(self.SP))] + [c[:2] for c in reversed(calls)]
        names = [n for n, _, _ in CALLEE_SAVED[p.arch]]
        self.truth = [dict(self.regs)] + [dict(zip(names, c[2])) for c in reversed(calls)]
        return self.frames

    def read_regs(self):
        uc = self.uc
        if self.p.arch == "x86_64":
            vals = [uc.reg_read(r) for r in X86_UC] + [0] * 6
            names = X86_NAMES
        else:
            vals = [uc.reg_read(r) for r in ARM64_UC]
            names = ARM64_NAMES
        return dict(zip(names, vals))

    def regs_array(self):
        names = X86_NAMES if self.p.arch == "x86_64" else ARM64_NAMES
        vals = [self.regs.get(n, 0) for n in names]
        return vals + [0] * (40 - len(vals))

    # ---- mode (a): the state file ----

    def write_state(self, directory):
        os.makedirs(directory, exist_ok=True)
        sp = self.regs["rsp" if self.p.arch == "x86_64" else "sp"]
        lo = max(STACK_HI - STACK_SIZE, (sp - 512) & ~0xFFF)  # what a capture saves: sp up
        with open(os.path.join(directory, "stack.bin"), "wb") as f:
            f.write(bytes(self.uc.mem_read(lo, STACK_HI - lo)))
        if self.p.arch == "x86_64":
            regs = {n: f"{self.regs[n]:#x}" for n in X86_NAMES[:18]}
        else:
            regs = {n: f"{self.regs[n]:#x}" for n in ARM64_NAMES}
        state = {
            "faultline_unwind_state": 1,
            "arch": self.p.arch,
            "registers": regs,
            "stack": {"low": f"{STACK_HI - STACK_SIZE:#x}", "high": f"{STACK_HI:#x}"},
            "memory": [{"address": f"{lo:#x}", "file": "stack.bin"}],
            "images": [{"path": os.path.abspath(self.p.path), "load_address": f"{self.p.load:#x}"}],
        }
        path = os.path.join(directory, "state.json")
        with open(path, "w") as f:
            json.dump(state, f, indent=1)
            f.write("\n")
        return path

    # ---- mode (b): the walker inside the emulator ----

    def _call_walk(self, passes):
        """Sets up the call of emu_walk (its stack, the passes wanted) and returns its address;
        the caller runs it to MAGIC."""
        uc, p = self.uc, self.p
        uc.mem_write(ARGS + A_PASSES, struct.pack("<Q", passes))
        top = WALK_STACK + WALK_STACK_SIZE - 0x40
        set_call(uc, p.arch, top, MAGIC, ARGS)
        return p.sym("emu_walk")

    def _run_walk(self, entry, who="the walker"):
        uc, p = self.uc, self.p
        try:
            uc.emu_start(entry, MAGIC, count=INSN_LIMIT)
        except U.UcError as e:
            pc = uc.reg_read(self.PC)
            raise HarnessError(f"{who} faulted in the emulator: {e} at pc {pc:#x} "
                               f"({p.symbolize(pc)})") from e
        if uc.reg_read(self.PC) != MAGIC:
            raise HarnessError(f"{who} did not return within {INSN_LIMIT} instructions")

    def _walk_result(self, count_at, frames_at, k):
        """Frames, stop reason and count of pass k from the arrays at count_at (count,
        truncated, stop_reason: k of 2 or 3 each) and frames_at."""
        uc = self.uc
        npasses = PASSES if count_at == ARGS + A_COUNT else REG_PASSES
        res = struct.unpack(f"<{3 * npasses}Q", uc.mem_read(count_at, 24 * npasses))
        n, truncated, reason_addr = res[k], res[npasses + k], res[2 * npasses + k]
        if n > FRAMES_MAX:
            raise HarnessError(f"emu_walk wrote {n} frames (at most {FRAMES_MAX})")
        raw = bytes(uc.mem_read(frames_at + 24 * FRAMES_MAX * k, 24 * n))
        frames = [struct.unpack_from("<QQI", raw, 24 * i) for i in range(n)]
        reason = bytes(uc.mem_read(reason_addr, 96)).split(b"\0")[0].decode(
            errors="replace") if reason_addr else ""
        if truncated:
            reason += " (truncated)"
        return [(f[0], f[1], METHODS.get(f[2], str(f[2]))) for f in frames], reason

    def walk_inside(self, profile=None):
        """Runs emu_walk on the faulting state (emu_walk.c: pass 0 frame pointers only, 1 the
        crash path's walk, 2 the same with the row cache warm; instructions counted), then, in
        a second call without counting, passes 3 and 4 (as 1 and 2, with env.frame_regs).
        Returns (walks, reg_walks): walks one result per pass 0..2, {'frames': [(pc, sp,
        method)], 'reason', 'describe', 'begin', 'costs': [instructions per frame from frame
        1], 'reads': [...], 'end'}; reg_walks per pass 3, 4 {'frames', 'reason', 'regs':
        [{name: value} per frame, the registers the walker knew, in DWARF order]}."""
        uc, p = self.uc, self.p
        uc.mem_map(WALK_STACK, WALK_STACK_SIZE, U.UC_PROT_READ | U.UC_PROT_WRITE)
        uc.mem_map(ARGS, ARGS_SIZE, U.UC_PROT_READ | U.UC_PROT_WRITE)
        uc.mem_map(MAGIC, 0x1000, U.UC_PROT_READ | U.UC_PROT_EXEC)
        args = struct.pack("<40Q", *self.regs_array())
        args += struct.pack("<6Q", p.load, p.lo, p.hi, STACK_HI - STACK_SIZE, STACK_HI,
                            FRAMES_MAX)
        uc.mem_write(ARGS, args)
        count = [0, 0]  # instructions, calls of image_read (the reader beyond the stack)
        marks = []  # (instructions, reads, what, value): what 'phase' or 'frame'
        seen = set()
        slow = p.m.symbols.get("_image_read")
        slow = slow + p.slide if slow is not None else None

        def on_code(uc_, addr, size, _):
            count[0] += 1
            if addr == slow:
                count[1] += 1

        def on_code_profile(uc_, addr, size, _):
            on_code(uc_, addr, size, _)
            k = (len(marks), addr)  # by interval between marks, for per-step profiles
            profile[k] = profile.get(k, 0) + 1

        def on_write(uc_, access, addr, size, value, _):
            if addr == ARGS + A_PHASE:
                marks.append((count[0], count[1], "phase", value))
            elif addr >= ARGS + A_FRAMES:
                k = (addr - ARGS - A_FRAMES) // 24
                if k not in seen:
                    seen.add(k)
                    marks.append((count[0], count[1], "frame", k % FRAMES_MAX))

        entry = self._call_walk((1 << PASSES) - 1)
        h1 = uc.hook_add(U.UC_HOOK_CODE, on_code if profile is None else on_code_profile)
        h2 = uc.hook_add(U.UC_HOOK_MEM_WRITE, on_write, begin=ARGS + A_PHASE,
                         end=ARGS + A_FRAMES + 24 * FRAMES_MAX * PASSES - 1)
        try:
            self._run_walk(entry)
        finally:
            uc.hook_del(h1)
            uc.hook_del(h2)
        describe_error = struct.unpack("<q", uc.mem_read(ARGS + A_PHASE + 8, 8))[0]
        if describe_error:
            raise HarnessError(f"fl_macho_image_describe failed in the emulator: {describe_error}")
        # Costs per pass, from the marks: instructions (and reads beyond the stack, which on
        # Darwin are vm_read_overwrite calls) describing the image, up to frame 0, for each
        # further frame, and after the last (the steps that found no caller).
        bounds, at_marks = [], []
        for c, r, what, v in marks:
            if what == "phase" and v % 2 == 1:
                bounds.append({"start": (c, r), "at": []})
            elif what == "phase":
                bounds[-1]["walk"] = (c, r)
            elif bounds:
                bounds[-1]["at"].append((c, r))
                bounds[-1].setdefault("marks", []).append(len(at_marks))
            at_marks.append(None)
        if len(bounds) != PASSES:
            raise HarnessError(f"emu_walk made {len(bounds)} passes, not {PASSES}")
        out = []
        for k in range(PASSES):
            frames, reason = self._walk_result(ARGS + A_COUNT, ARGS + A_FRAMES, k)
            b = bounds[k]
            end = bounds[k + 1]["start"] if k + 1 < PASSES else tuple(count)
            at = b["at"]
            out.append({
                "frames": frames,
                "reason": reason,
                "describe": b["walk"][0] - b["start"][0],
                "describe_reads": b["walk"][1] - b["start"][1],
                "begin": at[0][0] - b["walk"][0] if at else None,
                "costs": [at[i][0] - at[i - 1][0] for i in range(1, len(at))],
                "reads": [at[i][1] - at[i - 1][1] for i in range(1, len(at))],
                "end": end[0] - at[-1][0] if at else None,
                # --profile: the key of the instructions of step i (frame i-1 -> i) is
                # intervals[i - 1]
                "intervals": [m + 1 for m in b.get("marks", [])],
            })
        # Passes 3 and 4, uncounted (no hook: the emulator runs them at full speed).
        self._run_walk(self._call_walk(((1 << REG_PASSES) - 1) << PASSES))
        names = DWARF_NAMES[p.arch]
        reg_out = []
        for k in range(REG_PASSES):
            frames, reason = self._walk_result(ARGS + A_REG_COUNT, ARGS + A_REG_FRAMES, k)
            raw = bytes(uc.mem_read(ARGS + A_FRAME_REGS + 8 * (DWARF_REGS + 1) * FRAMES_MAX * k,
                                    8 * (DWARF_REGS + 1) * len(frames)))
            regs = []
            for i in range(len(frames)):
                v = struct.unpack_from(f"<{DWARF_REGS + 1}Q", raw, 8 * (DWARF_REGS + 1) * i)
                valid = v[DWARF_REGS]
                bad = valid >> DWARF_REGS
                if bad:
                    raise HarnessError(f"frame_regs[{i}].valid {valid:#x}: bits past register "
                                       f"{DWARF_REGS - 1}")
                regs.append({names[d]: v[d] for d in range(DWARF_REGS) if valid >> d & 1})
            reg_out.append({"frames": frames, "reason": reason, "regs": regs})
        return out, reg_out

    def walk_reference(self):
        """The benchmark's reference: LLVM libunwind (emu_ref.c) on the same faulting state,
        after walk_inside (its stack and return address). Returns {'frames': [(pc, sp,
        'libunwind')], 'reason', 'begin', 'costs', 'reads'} as walk_inside's walks (reads: 0,
        libunwind reads memory directly)."""
        uc, p = self.uc, self.p
        uc.mem_map(REF_ARGS, REF_ARGS_SIZE, U.UC_PROT_READ | U.UC_PROT_WRITE)
        info = p.m.section("__TEXT", "__unwind_info")
        eh = p.m.section("__TEXT", "__eh_frame")
        sec = []
        for x in (info, eh):
            sec += [x["addr"] + p.slide, x["size"]] if x else [0, 0]
        uc.mem_write(REF_ARGS, struct.pack("<40Q", *self.regs_array())
                     + struct.pack("<8Q", p.load, p.lo, p.hi, *sec, FRAMES_MAX))
        count, marks, seen = [0], [], set()

        def on_code(uc_, addr, size, _):
            count[0] += 1

        def on_write(uc_, access, addr, size, value, _):
            if addr == REF_ARGS + R_PHASE:
                marks.append((count[0], "phase"))
            elif addr >= REF_ARGS + R_FRAMES:
                k = (addr - REF_ARGS - R_FRAMES) // 16
                if k not in seen:
                    seen.add(k)
                    marks.append((count[0], "frame"))

        top = WALK_STACK + WALK_STACK_SIZE - 0x40
        set_call(uc, p.arch, top, MAGIC, REF_ARGS)
        h1 = uc.hook_add(U.UC_HOOK_CODE, on_code)
        h2 = uc.hook_add(U.UC_HOOK_MEM_WRITE, on_write, begin=REF_ARGS + R_PHASE,
                         end=REF_ARGS + R_FRAMES + 16 * FRAMES_MAX - 1)
        try:
            self._run_walk(p.sym("emu_ref_walk"), "libunwind")
        finally:
            uc.hook_del(h1)
            uc.hook_del(h2)
        n, last = struct.unpack("<Qq", uc.mem_read(REF_ARGS + R_PHASE + 8, 16))
        if n > FRAMES_MAX:
            raise HarnessError(f"emu_ref_walk wrote {n} frames (at most {FRAMES_MAX})")
        raw = bytes(uc.mem_read(REF_ARGS + R_FRAMES, 16 * n))
        frames = [struct.unpack_from("<QQ", raw, 16 * i) + ("libunwind",) for i in range(n)]
        at = [c for c, what in marks if what == "frame"]
        walk = [c for c, what in marks if what == "phase"]
        return {"frames": frames,
                "reason": f"unw_step returned {last}" if last <= 0 else "frames wanted",
                "begin": at[0] - walk[-1] if at and walk else None,
                "costs": [at[i] - at[i - 1] for i in range(1, len(at))],
                "reads": [0] * max(len(at) - 1, 0)}


# ---------------------------------------------------------------------------------------------
# Cases

# name, function in emu_cases[], kind (fault or interruption), where to stop (interruptions)
CASES = [
    ("leaf", "case_leaf", "fault", None),
    ("leaf_asm", "case_leaf_asm", "fault", None),
    ("null_call", "case_null_call", "fault", None),
    ("big_body", "case_big_body", "fault", None),
    ("big_call", "case_big_call", "fault", None),
    ("recurse", "case_recurse", "fault", None),
    ("kinds", "case_kinds", "fault", None),
    ("dwarf_body", "case_dwarf_body", "fault", None),
    ("tail_load", "case_tail_load", "fault", None),
    ("entry", "case_interrupt", "interrupt", "entry"),
    ("prologue", "case_interrupt", "interrupt", "prologue"),
    ("epilogue", "case_interrupt", "interrupt", "epilogue"),
]
CASE_NOTES = {
    "leaf": "fault in a frameless C leaf (x86_64 omitfp: no unwind entry, defect 1)",
    "leaf_asm": "fault in an asm leaf without CFI (encoding 0 everywhere)",
    "null_call": "call through a NULL function pointer (pc 0)",
    "big_body": "fault in the body of a function with 8 KiB of locals",
    "big_call": "fault in a leaf called by a function with 8 KiB of locals",
    "recurse": "recursion 200 deep, fault in a leaf",
    "kinds": "chain through saves / big frame / asm DWARF / preserve_most / leaf with saves",
    "dwarf_body": "fault in the body of a preserve_most (DWARF) function, between calls",
    "tail_load": "fault in a function's last load (arm64 -O2/Os: after the epilogue's ldp fp, lr)",
    "entry": "interrupted at int_target's first instruction",
    "prologue": "interrupted after int_target's first prologue instruction",
    "epilogue": "interrupted at int_target's ret (epilogue done)",
}


def stop_address(prog, where):
    start = prog.sym("int_target")
    insns = prog.insns.get(start)
    if not insns:
        raise HarnessError("int_target: no instructions")
    if where == "entry":
        return start
    if where == "prologue":
        return insns[1][0]
    rets = [a for a, _, mn in insns if mn.startswith("ret")]
    if not rets:
        raise HarnessError("int_target: no ret (tail call?)")
    return rets[0]


def check_case(name, prog, frames):
    """The properties a case needs of its true chain (the compiler keeps the chains cases.c
    intends; if it does not, the test program is wrong, not the walker)."""
    names = [prog.symbolize(pc) for pc, _ in frames]
    if name == "recurse" and sum(1 for n in names if n.startswith("recurse+")) < 200:
        raise HarnessError("recurse: fewer than 200 frames of recurse in the true chain")
    if name == "null_call" and frames[0][0] != 0:
        raise HarnessError("null_call: the fault is not at pc 0")
    if not names[-1].startswith("emu_main+"):
        raise HarnessError(f"the outermost live frame is {names[-1]}, not emu_main")


def compare(prog, expected, got, reason):
    """None when got (walker frames) equals expected (true chain) in pc and sp, frame by frame;
    else the first difference."""
    for i in range(max(len(expected), len(got))):
        if i >= len(got):
            pc, sp = expected[i]
            return (f"frame {i} missing: expected pc {pc:#x} ({prog.symbolize(pc)}) sp {sp:#x}; "
                    f"the walk stopped: {reason}")
        if i >= len(expected):
            pc, sp, m = got[i][:3]
            return f"extra frame {i}: pc {pc:#x} ({prog.symbolize(pc)}) sp {sp:#x} [{m}]"
        (epc, esp), (gpc, gsp, m) = expected[i], got[i][:3]
        if epc != gpc or esp != gsp:
            return (f"frame {i}: expected pc {epc:#x} ({prog.symbolize(epc)}) sp {esp:#x}, got "
                    f"pc {gpc:#x} ({prog.symbolize(gpc)}) sp {gsp:#x} [{m}]")
    return None


def compare_regs(prog, expected, truth, got, got_regs):
    """The walker's registers (got_regs: {name: value} per frame of got, those it reported
    known) against the truth (Emulation.truth), in the frames whose pc and sp are right: frame
    0 every register reported, each frame i >= 1 every callee-saved one reported (pc and sp are
    compare()'s; any other register reported known is a failure: a call does not preserve it).
    Returns (the first difference or None, values compared at frame 0, values compared at each
    frame i >= 1 as a list indexed by i, how many of those differ from the callee's own value:
    registers the walker had to restore rather than carry)."""
    saved = {n for n, _, _ in CALLEE_SAVED[prog.arch]}
    pc_sp = PC_SP_NAMES[prog.arch]
    n0, per_frame, diff, changed = 0, [0], None, 0
    for i in range(min(len(expected), len(truth), len(got), len(got_regs))):
        if tuple(got[i][:2]) != tuple(expected[i]):
            break
        n = 0
        for name, v in got_regs[i].items():
            if i > 0 and name in pc_sp:
                continue
            if i > 0 and name not in saved:
                diff = (f"frame {i} register {name}: reported known, but no call preserves it "
                        f"({v:#x}; pc {got[i][0]:#x} {prog.symbolize(got[i][0])} [{got[i][2]}])")
                break
            want = truth[i].get(name)
            if want is None:
                continue  # (frame 0: a register the emulator does not give, e.g. cr2)
            n += 1
            if i > 0 and want != truth[i - 1].get(name):
                changed += 1
            if v != want:
                diff = (f"frame {i} register {name}: expected {want:#x}, got {v:#x} (pc "
                        f"{got[i][0]:#x} {prog.symbolize(got[i][0])} [{got[i][2]}])")
                break
        if i == 0:
            n0 = n
        else:
            per_frame.append(n)
        if diff:
            break
    return diff, n0, per_frame, changed


def first_wrong(expected, got):
    for i in range(max(len(expected), len(got))):
        if i >= len(got) or i >= len(expected) or expected[i] != tuple(got[i][:2]):
            return i
    return None


def parse_hex(v):
    if isinstance(v, int):
        return v
    return int(v, 0)


def run_cli(cmd, state):
    """Mode (a): the command's frames [(pc, sp, method)], stop reason, and registers per frame
    [{name: value}] (each frame's "registers": those the walk knew there)."""
    argv = [a.replace("{state}", state) for a in cmd]
    if not any("{state}" in a for a in cmd):
        argv.append(state)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HarnessError(f"{shlex.join(argv)}: {e}") from e
    if r.returncode:
        msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise HarnessError(f"exit {r.returncode}: {msg[0] if msg else ''}")
    try:
        doc = json.loads(r.stdout)
        # {"frames", "unwind_stop", ...}, or a report as `faultline show --json` prints it (the
        # crashed thread's).
        if "frames" not in doc:
            threads = doc["threads"]
            doc = next((t for t in threads if t.get("crashed")), threads[0])
        frames = [(parse_hex(f["pc"]), parse_hex(f["sp"]), f.get("method", "?"))
                  for f in doc["frames"]]
        regs = []
        for i, f in enumerate(doc["frames"]):
            if not isinstance(f.get("registers"), dict):
                raise HarnessError(f"frame {i} of the output has no \"registers\" (a CLI "
                                   "older than the per-frame registers? rebuild it)")
            regs.append({k: parse_hex(v) for k, v in f["registers"].items()})
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise HarnessError(f"output not the expected JSON ({e}): {r.stdout[:200]!r}") from e
    return frames, doc.get("unwind_stop", ""), regs


# ---------------------------------------------------------------------------------------------
# Main


def step_kind(prog, got, i):
    """The kind of the walker's step from frame i-1 to frame i: by its method and the encoding
    of the function it stepped from ('compact', 'dwarf', 'fp', 'lr', 'scan'; x86_64's step from
    a function's entry state, the return address on top of the stack, is reported as 'scan')."""
    method = got[i][2]
    if method in ("cfi", "libunwind"):  # (libunwind: the reference, emu_ref.c)
        pc = got[i - 1][0]
        _, _, kind = prog.encoding_at(pc if i == 1 else pc - 1)
        if method == "libunwind" and kind in ("none", "?"):
            return "none"
        return "dwarf" if kind.startswith("DWARF") else "compact"
    return method


def sweep(prog, args, cmd_why, modes):
    """Interrupts int_target at each of its instructions up to its last ret, as a snapshot may
    suspend a thread anywhere; walks each state in the modes asked for."""
    start = prog.sym("int_target")
    insns = prog.insns[start]
    last_ret = max((k for k, (_, _, mn) in enumerate(insns) if mn.startswith("ret")), default=-1)
    out = {"arch": prog.arch, "build": prog.build, "points": 0, "errors": [],
           "fail": {m: [] for m in sorted(modes)}, "notrun": {}}
    cmd, why = cmd_why
    for addr, _, _ in insns[:last_ret + 1]:
        off = addr - start
        try:
            emu = Emulation(prog)
            expected = emu.run(emu.case_index("case_interrupt"), addr)
        except HarnessError as e:
            out["errors"].append(f"+{off:#x}: {e}")
            continue
        out["points"] += 1
        if "a" in modes:
            if cmd is None:
                out["notrun"]["a"] = f"not run: {why}"
            else:
                d = os.path.join(args.out, "runs", prog.arch, prog.build, f"sweep+{off:x}")
                try:
                    got, reason, gregs = run_cli(cmd, emu.write_state(d))
                    diff = compare(prog, expected, got, reason)
                    diff = compare_regs(prog, expected, emu.truth, got, gregs)[0] or diff
                except HarnessError as e:
                    diff = f"command failed: {e}"
                if diff:
                    out["fail"]["a"].append((off, diff))
        if "b" in modes:
            try:
                walks, rwalks = emu.walk_inside()
                w = walks[1]
                diff = compare(prog, expected, w["frames"], w["reason"])
                for rname, rw in zip(REG_WALKS, rwalks):
                    rdiff = compare_regs(prog, expected, emu.truth, rw["frames"], rw["regs"])[0]
                    if rdiff:
                        diff = f"{rdiff} [{rname} walk]"
                        break
                    if not diff and [f[:2] for f in rw["frames"]] != [f[:2] for f in w["frames"]]:
                        diff = f"the {rname} walk with frame_regs differs from the crash path's"
            except HarnessError as e:
                diff = str(e)
            if diff:
                out["fail"]["b"].append((off, diff))
    return out


def build(args):
    sh = os.path.join(HERE, "build.sh")
    t = time.time()
    r = subprocess.run(["sh", sh, args.zig, args.out], capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout + r.stderr)
        raise HarnessError(f"build.sh failed (exit {r.returncode})")
    if r.stderr.strip():
        sys.stderr.write(r.stderr)
    return time.time() - t


def command_for(arch, args):
    """(argv template, None) or (None, why not)."""
    env = os.environ.get(f"FL_EMU_CMD_{arch.upper()}")
    tmpl = env or getattr(args, f"cmd_{arch}")
    if tmpl:
        return shlex.split(tmpl), None
    cli = getattr(args, f"cli_{arch}")
    if not cli:
        return None, f"no {arch} faultline CLI given"
    if not os.path.exists(cli):
        return None, f"no {arch} faultline CLI at {cli}"
    prefix = shlex.split(args.qemu_arm64) if arch == "arm64" else []
    return prefix + [cli, "unwind", "--format", "json", "{state}"], None


def main():
    ap = argparse.ArgumentParser(description="Darwin emulation harness (issue 13)")
    ap.add_argument("--zig", default=os.path.join(ROOT, ".deps/zig/zig"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/tests/darwin_emu"))
    ap.add_argument("--objdump", default="llvm-objdump-14")
    ap.add_argument("--cli-x86_64", dest="cli_x86_64",
                    default=os.path.join(ROOT, "build/tools/faultline"))
    ap.add_argument("--cli-arm64", dest="cli_arm64",
                    default=os.path.join(ROOT, "build-arm64/tools/faultline"))
    ap.add_argument("--qemu-arm64", default="qemu-aarch64 -L /usr/aarch64-linux-gnu")
    ap.add_argument("--cmd-x86_64", dest="cmd_x86_64")
    ap.add_argument("--cmd-arm64", dest="cmd_arm64")
    ap.add_argument("--arch", default="x86_64,arm64")
    ap.add_argument("--builds", default="")
    ap.add_argument("--cases", default="")
    ap.add_argument("--modes", default="a,b")
    ap.add_argument("--bench")
    ap.add_argument("--strict", action="store_true", help="a mode that cannot run fails")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--sweep", action="store_true",
                    help="also interrupt int_target at each of its instructions")
    ap.add_argument("--reference", action="store_true",
                    help="mode (b): also count LLVM libunwind's steps on the same states "
                         "(emu_ref.c; in the instruction table as the walk 'libunwind')")
    ap.add_argument("--profile", action="store_true",
                    help="mode (b): instructions of the walks by function")
    args = ap.parse_args()
    t0 = time.time()
    arches = [a for a in args.arch.split(",") if a]
    modes = set(args.modes.split(","))
    want_builds = set(b for b in args.builds.split(",") if b)
    want_cases = set(c for c in args.cases.split(",") if c)
    unknown = want_cases - {c[0] for c in CASES}
    if unknown:
        print(f"darwin_emu: unknown cases {sorted(unknown)}", file=sys.stderr)
        return 1

    try:
        if not args.no_build:
            bt = build(args)
            print(f"darwin_emu: programs built ({bt:.1f} s): {args.out}")
        with open(os.path.join(args.out, "list")) as f:
            listed = [ln.split() for ln in f if ln.strip()]
    except (HarnessError, OSError) as e:
        print(f"darwin_emu: ERROR: {e}", file=sys.stderr)
        return 1

    cmds = {a: command_for(a, args) for a in arches}
    rows, details, errors = [], [], 0
    coverage = {}  # (arch, kind) -> [steps, ok a, ok b]
    # Register values compared with the truth: (arch, mode) -> [frame 0, frames >= 1, of which
    # not the callee's value], mode "a",
    # "b cold", "b warm"; by the kind of the function stepped from: (arch, kind) -> [a, b cold];
    # by the walker's step: (arch, mode) -> {method: n}
    regcount, regcov, regmethod = {}, {}, {}

    def count_regs(arch, mode, chain, frames, n0, per_frame, changed):
        c = regcount.setdefault((arch, mode), [0, 0, 0])
        c[0] += n0
        c[1] += sum(per_frame)
        c[2] += changed
        m = regmethod.setdefault((arch, mode), {})
        for i in range(1, len(per_frame)):
            m[frames[i][2]] = m.get(frames[i][2], 0) + per_frame[i]
            if mode != "b warm":
                k = regcov.setdefault((arch, chain[i - 1]), [0, 0])
                k[0 if mode == "a" else 1] += per_frame[i]
    bench = []  # per walked frame: arch, build, case, kind, cold, warm
    encodings_seen = {}  # (arch, build) -> {function: (enc, kind)}
    profiles, profiles_frames = {}, {}  # --profile: arch -> {function: instructions}
    step_profiles = {}  # --profile: (arch, step) -> [{function: instructions}, steps]
    sweeps = []  # --sweep: one summary per program
    for arch, bname, path in listed:
        if arch not in arches or (want_builds and bname not in want_builds):
            continue
        try:
            prog = Program(arch, bname, path, args.objdump)
        except HarnessError as e:
            print(f"darwin_emu: ERROR: {arch} {bname}: {e}", file=sys.stderr)
            errors += 1
            continue
        encs = encodings_seen.setdefault((arch, bname), {})
        for cname, func, ckind, where in CASES:
            if want_cases and cname not in want_cases:
                continue
            row = {"arch": arch, "build": bname, "case": cname, "kind": ckind}
            rows.append(row)
            try:
                emu = Emulation(prog)
                stop = stop_address(prog, where) if where else None
                idx = emu.case_index(func)
                expected = emu.run(idx, stop)
                check_case(cname, prog, expected)
            except HarnessError as e:
                row["error"] = str(e)
                details.append(f"{arch} {bname} {cname}: ERROR: {e}")
                errors += 1
                continue
            row["frames"] = len(expected)
            chain = []
            for i, (pc, _) in enumerate(expected):
                if not prog.text_lo <= pc < prog.text_hi:
                    chain.append("(no code)")  # null_call's pc 0
                    continue
                fn, enc, kind = prog.encoding_at(pc if i == 0 else pc - 1)
                chain.append(kind)
                encs[fn] = (enc, kind)
            row["chain"] = chain
            results = {}
            if "a" in modes:
                cmd, why = cmds[arch]
                if cmd is None:
                    results["a"] = ("not run", why, None)
                else:
                    d = os.path.join(args.out, "runs", arch, bname, cname)
                    state = emu.write_state(d)
                    try:
                        got, reason, gregs = run_cli(cmd, state)
                        diff = compare(prog, expected, got, reason)
                        # (frames before the first wrong pc or sp only: a register difference
                        # is the first wrong frame)
                        rdiff, n0, per_frame, changed = compare_regs(prog, expected, emu.truth,
                                                                     got, gregs)
                        count_regs(arch, "a", chain, got, n0, per_frame, changed)
                        diff = rdiff or diff
                        results["a"] = ("pass" if diff is None else "FAIL", diff, got)
                    except HarnessError as e:
                        results["a"] = ("FAIL", f"command failed: {e}", None)
            if "b" in modes:
                try:
                    prof = {} if args.profile else None
                    walks, rwalks = emu.walk_inside(profile=prof)
                    cold, warm = walks[1], walks[2]
                    got = cold["frames"]
                    diff = compare(prog, expected, got, cold["reason"])
                    if diff is None and [f[:2] for f in warm["frames"]] != [f[:2] for f in got]:
                        diff = (f"the warm walk differs from the cold one: "
                                f"{compare(prog, expected, warm['frames'], warm['reason'])}")
                    # The walks with frame_regs (emu_walk.c passes 3, 4): the crash path's
                    # frames, and registers that match the truth.
                    rdiffs = []
                    for rname, rw in zip(REG_WALKS, rwalks):
                        rdiff, n0, per_frame, changed = compare_regs(
                            prog, expected, emu.truth, rw["frames"], rw["regs"])
                        count_regs(arch, f"b {rname}", chain, rw["frames"], n0, per_frame,
                                   changed)
                        if rdiff:
                            rdiffs.append((len(per_frame), f"{rdiff} [{rname} walk]"))
                        if diff is None and [f[:3] for f in rw["frames"]] != \
                                [f[:3] for f in got]:
                            k = next((i for i, (x, y) in enumerate(zip(rw["frames"], got))
                                      if x[:3] != y[:3]), min(len(rw["frames"]), len(got)))
                            diff = (f"the {rname} walk with frame_regs (no fast path) differs "
                                    f"from the crash path's at frame {k}: "
                                    f"{rw['frames'][k:k + 1]} vs {got[k:k + 1]}")
                    if rdiffs:
                        diff = min(rdiffs)[1]
                    results["b"] = ("pass" if diff is None else "FAIL", diff, got)
                    row["walks"] = [{k: w[k] for k in ("describe", "describe_reads", "begin",
                                                       "end", "reason")} for w in walks]
                    if prof:
                        agg = profiles.setdefault(arch, {})
                        for (_, a), n in prof.items():
                            f = prog.m.function_of(a - prog.slide)
                            agg[f[2] if f else hex(a)] = agg.get(f[2] if f else hex(a), 0) + n
                        profiles_frames[arch] = profiles_frames.get(arch, 0) + \
                            sum(len(w["frames"]) for w in walks)
                    ref = None
                    if args.reference:  # (never a failure of the case: a benchmark's)
                        try:
                            ref = emu.walk_reference()
                            row["reference"] = compare(prog, expected, ref["frames"],
                                                       ref["reason"]) or "pass"
                        except HarnessError as e:
                            row["reference"] = str(e)
                    for wname, w in zip(WALKS, walks + [ref] if ref else walks):
                        frames = w["frames"]
                        fw = first_wrong(expected, frames)
                        stepped_from = set()
                        for i in range(1, min(len(frames), len(w["costs"]) + 1)):
                            pc = frames[i - 1][0]
                            fn = prog.encoding_at(pc if i == 1 else pc - 1)[0] \
                                if prog.text_lo <= pc < prog.text_hi else "(no code)"
                            bench.append({"arch": arch, "build": bname, "case": cname,
                                          "walk": wname, "frame": i,
                                          "step": step_kind(prog, frames, i), "function": fn,
                                          "first": fn not in stepped_from,
                                          "correct": fw is None or fw > i,
                                          "instructions": w["costs"][i - 1],
                                          "reads": w["reads"][i - 1]})
                            stepped_from.add(fn)
                            if prof and wname == "cold" and bench[-1]["first"]:
                                key = (arch, ("frame 0 cold, " if i == 1 else "first visit cold, ")
                                       + bench[-1]["step"])
                                agg = step_profiles.setdefault(key, [{}, 0, {}])
                                agg[1] += 1
                                iv = w["intervals"][i - 1]
                                for (k2, a), n in prof.items():
                                    if k2 == iv:
                                        f = prog.m.function_of(a - prog.slide)
                                        nm = f[2] if f else hex(a)
                                        agg[0][nm] = agg[0].get(nm, 0) + n
                                        if f and f[0] == a - prog.slide:  # entered: a call
                                            agg[2][nm] = agg[2].get(nm, 0) + n
                except HarnessError as e:
                    results["b"] = ("FAIL", f"{e}", None)
            row["results"] = results
            for mode, (status, diff, got) in results.items():
                if status == "FAIL":
                    details.append(f"{arch} {bname} {cname} ({mode}): {diff}")
            # Coverage: each true step (frame i -> i+1) by the kind of the function at frame i.
            for i in range(len(expected) - 1):
                k = (arch, chain[i])
                c = coverage.setdefault(k, [0, 0, 0])
                c[0] += 1
                for j, mode in ((1, "a"), (2, "b")):
                    st = results.get(mode)
                    if st and st[2] is not None:
                        fw = first_wrong(expected, st[2])
                        if fw is None or fw > i + 1:
                            c[j] += 1
            if args.verbose:
                stop = row["walks"][1]["reason"] if row.get("walks") else "-"
                print(f"  {arch} {bname} {cname}: "
                      + ", ".join(f"({m}) {r[0]}" for m, r in results.items())
                      + f"; (b) stopped: {stop}", flush=True)
        if args.sweep:
            sweeps.append(sweep(prog, args, cmds[arch], modes))

    # ---- The table ----
    def brief(r, mode):
        res = r.get("results", {}).get(mode)
        if "error" in r:
            return "ERROR"
        if not res:
            return "-"
        if res[0] == "pass":
            return "pass"
        if res[0] == "not run":
            return "not run"
        m = re.match(r"(frame|extra frame) (\d+)", res[1] or "")
        if m:
            return f"FAIL@{m.group(2)}"
        return "FAIL"

    print()
    print(f"{'arch':7} {'build':10} {'case':11} {'type':9} {'frames':>6}  {'(a)':10} {'(b)':10}"
          "  encodings along the true chain (frame 0 first)")
    for r in rows:
        chain = r.get("chain", [])
        if len(chain) > 8:
            short = chain[:5] + [f"... x{len(chain) - 7}"] + chain[-2:]
        else:
            short = chain
        print(f"{r['arch']:7} {r['build']:10} {r['case']:11} {r['kind']:9} "
              f"{r.get('frames', '-'):>6}  {brief(r, 'a'):10} {brief(r, 'b'):10}  "
              f"{' '.join(short)}")

    print("\nCases:")
    for name, _, kind, _ in CASES:
        print(f"  {name:11} {kind:9} {CASE_NOTES[name]}")

    notrun = {}
    for r in rows:
        for mode, res in r.get("results", {}).items():
            if res[0] == "not run":
                notrun.setdefault((r["arch"], mode), res[1])
    for (arch, mode), why in sorted(notrun.items()):
        print(f"\nNOT RUN: {arch} mode ({mode}): {why}")

    if sweeps:
        print("\nSweep: interrupted at every instruction of int_target until its ret "
              "(offsets from int_target; each failure: its first wrong frame)")
        for sw in sweeps:
            print(f"  {sw['arch']:7} {sw['build']:10} {sw['points']:3} points: " + ", ".join(
                f"({m}) {sw['fail'][m] and len(sw['fail'][m]) or 0} failed"
                + (f" [{sw['notrun'][m]}]" if sw["notrun"].get(m) else "")
                for m in sorted(sw["fail"])))
            for m in sorted(sw["fail"]):
                for off, msg in sw["fail"][m]:
                    print(f"      ({m}) +{off:#x}: {msg}")
            for e in sw["errors"]:
                print(f"      ERROR {e}")

    if details:
        print("\nFailures (first wrong frame) and errors:")
        for d in details:
            print("  " + d)

    print("\nEncoding kinds (llvm-objdump --unwind-info): steps from a function of that kind "
          "along the true chains, and how many the walker got right")
    print("  and the callee-saved register values compared at the frames these steps gave "
          "((b): the cold walk with frame_regs)")
    print(f"  {'arch':7} {'kind':16} {'steps':>6} {'(a) ok':>7} {'(b) ok':>7} "
          f"{'(a) regs':>9} {'(b) regs':>9}")
    for (arch, kind), (n, a, b) in sorted(coverage.items()):
        ra, rb = regcov.get((arch, kind), (0, 0))
        print(f"  {arch:7} {kind:16} {n:6} {a:7} {b:7} {ra:9} {rb:9}")

    if regcount:
        print("\nRegisters compared with the true ones (frame 0: every register the walker "
              "reports; frames >= 1 whose pc and sp are right: every callee-saved register it "
              "reports known, rbx rbp r12-r15 / x19-x28 fp; 'restored': of these, values that "
              "differ from the callee's), by the walker's step:")
        total = {}
        for (arch, mode), (n0, n, ch) in sorted(regcount.items()):
            total[mode] = total.get(mode, 0) + n
            by = ", ".join(f"{m} {v}" for m, v in sorted(regmethod.get((arch, mode), {}).items()))
            print(f"  {arch:7} ({mode:6}) frames >= 1: {n:6} (restored {ch:5})   frame 0: {n0:5}"
                  f"   by step: {by}")
        print("  all: " + ", ".join(f"({m}) {v}" for m, v in sorted(total.items()))
              + " register values at frames >= 1")

    print("\nFunctions of the chains and their encodings:")
    for (arch, bname), encs in sorted(encodings_seen.items()):
        items = ", ".join(f"{fn} {enc:#010x} {kind}" if enc is not None else f"{fn} none"
                          for fn, (enc, kind) in sorted(encs.items()))
        print(f"  {arch} {bname}: {items}")

    summary = summarize_bench(bench)
    if summary:
        print("\nMode (b): emulated instructions per frame of the Darwin-built walker, by step "
              "kind (frames the walker got right).")
        print("  Walks: fp-only = fl_frames_walk without unwind tables; cold = the crash path's "
              "walk, row cache empty; warm = the same walk again. 'first' = the first step from "
              "each function of a walk (a recursion's repeats are not in it). reads = calls of "
              "the reader beyond the stack (median; on Darwin each is a vm_read_overwrite).")
        print(f"  {'arch':7} {'walk':8} {'step':8} {'frames':>6} {'min':>6} {'median':>6} "
              f"{'max':>6} {'reads':>5}   {'first':>5} {'median':>6} {'max':>6}")
        for x in summary:
            print(f"  {x['arch']:7} {x['walk']:8} {x['step']:8} {x['frames']:6} {x['min']:6} "
                  f"{x['median']:6} {x['max']:6} {x['reads']:5}   {x['first']:5} "
                  f"{x['first_median']:6} {x['first_max']:6}")
        for arch in arches:
            ws = [r["walks"][1] for r in rows if r.get("walks") and r["arch"] == arch]
            if ws:
                d = sorted(w["describe"] for w in ws)
                dr = sorted(w["describe_reads"] for w in ws)
                b = sorted(w["begin"] for w in ws if w["begin"] is not None)
                e = sorted(w["end"] for w in ws if w["end"] is not None)
                print(f"  {arch}: per walk (median): fl_macho_image_describe + fl_images_sort "
                      f"{d[len(d) // 2]} ({dr[len(dr) // 2]} reads), up to frame 0 "
                      f"{b[len(b) // 2] if b else '-'}, after the last frame "
                      f"{e[len(e) // 2] if e else '-'}")
    refs = [r for r in rows if r.get("reference")]
    versus = compare_walks(bench)
    for arch, v in sorted(versus.items()):
        print(f"  {arch}: the {v['walks']} walks that the walker and libunwind both got whole "
              f"({v['steps']} steps): instructions a step, the walker cold "
              f"{v['cold'] / v['steps']:.0f}, warm {v['warm'] / v['steps']:.0f}; libunwind "
              f"{v['libunwind'] / v['steps']:.0f} (cold / libunwind = "
              f"{v['cold'] / max(v['libunwind'], 1):.2f})")
    if refs:
        print("\nThe reference, LLVM libunwind (emu_ref.c), on the same states: whole chain "
              "right (pc and sp of every frame) in "
              + ", ".join(f"{arch} {sum(r['reference'] == 'pass' for r in refs if r['arch'] == arch)}"
                          f" of {sum(r['arch'] == arch for r in refs)}" for arch in arches)
              + " cases (the walker: every case); first wrong frames by case:")
        by = {}
        for r in refs:
            if r["reference"] != "pass":
                by.setdefault((r["arch"], r["case"]), []).append(r["build"])
        for (arch, case), builds in sorted(by.items()):
            print(f"  {arch:7} {case:11} {len(builds)} of 6 builds ({', '.join(builds)})")
        if args.verbose:
            for r in refs:
                if r["reference"] != "pass":
                    print(f"  {r['arch']} {r['build']} {r['case']}: {r['reference']}")
    for arch, agg in sorted(profiles.items()):
        total = sum(agg.values())
        print(f"\nProfile of the walks, {arch}: {total} instructions over "
              f"{profiles_frames[arch]} frames (both passes, all cases); top functions:")
        for fn, n in sorted(agg.items(), key=lambda kv: -kv[1])[:25]:
            print(f"  {n:10} {100.0 * n / total:5.1f} %  {fn}")
    for (arch, what), (agg, steps, calls) in sorted(step_profiles.items()):
        total = sum(agg.values())
        print(f"\nProfile, {arch}, {what}: {steps} steps, {total / max(steps, 1):.0f} "
              f"instructions a step; top functions (instructions a step, calls a step):")
        for fn, n in sorted(agg.items(), key=lambda kv: -kv[1])[:15]:
            print(f"  {n / steps:10.1f} {100.0 * n / total:5.1f} %  {calls.get(fn, 0) / steps:5.2f}  {fn}")
    if args.bench:
        with open(args.bench, "w") as f:
            json.dump({"summary": summary, "versus_libunwind": versus, "frames": bench,
                       "walks": [{"arch": r["arch"], "build": r["build"], "case": r["case"],
                                  "walks": dict(zip(WALKS, r["walks"]))}
                                 for r in rows if r.get("walks")]},
                      f, indent=1)
            f.write("\n")
        print(f"  (written to {args.bench})")

    failed = sum(1 for r in rows for res in r.get("results", {}).values() if res[0] == "FAIL")
    failed += sum(len(v) for sw in sweeps for v in sw["fail"].values())
    errors += sum(len(sw["errors"]) for sw in sweeps)
    passed = sum(1 for r in rows for res in r.get("results", {}).values() if res[0] == "pass")
    nr = sum(1 for r in rows for res in r.get("results", {}).values() if res[0] == "not run")
    print(f"\ndarwin_emu: {len(rows)} cases, {passed} passed, {failed} failed, {errors} errors, "
          f"{nr} not run ({time.time() - t0:.1f} s)")
    if failed or errors or (args.strict and nr):
        return 1
    return 0


def compare_walks(bench):
    """Per arch, over the walks (arch, build, case) whose every step both the walker (cold and
    warm) and the reference got right, with as many steps: {'walks', 'steps', 'cold', 'warm',
    'libunwind'} (instructions summed over those steps)."""
    walks = {}
    for b in bench:
        walks.setdefault((b["arch"], b["build"], b["case"]), {}).setdefault(b["walk"], []) \
            .append(b)
    out = {}
    for (arch, _, _), w in sorted(walks.items()):
        got = [w.get(k, []) for k in ("cold", "warm", "libunwind")]
        if not got[2] or len({len(g) for g in got}) != 1 or \
                not all(x["correct"] for g in got for x in g):
            continue
        v = out.setdefault(arch, {"walks": 0, "steps": 0, "cold": 0, "warm": 0, "libunwind": 0})
        v["walks"] += 1
        v["steps"] += len(got[0])
        for k, g in zip(("cold", "warm", "libunwind"), got):
            v[k] += sum(x["instructions"] for x in g)
    return out


def summarize_bench(bench):
    def med(v):
        return v[len(v) // 2] if v else 0

    out, groups = [], {}
    for b in bench:
        if b["correct"]:
            groups.setdefault((b["arch"], WALKS.index(b["walk"]), b["step"]), []).append(b)
    for (arch, w, step), lst in sorted(groups.items()):
        ins = sorted(x["instructions"] for x in lst)
        first = sorted(x["instructions"] for x in lst if x["first"])
        out.append({"arch": arch, "walk": WALKS[w], "step": step, "frames": len(lst),
                    "min": ins[0], "median": med(ins), "max": ins[-1],
                    "reads": med(sorted(x["reads"] for x in lst)),
                    "first": len(first), "first_median": med(first),
                    "first_max": first[-1] if first else 0})
    return out


if __name__ == "__main__":
    sys.exit(main())
