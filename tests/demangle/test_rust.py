# SPDX-License-Identifier: MIT
# The Rust demangler against binutils' c++filt, and Rust names in every view of the CLI.
# rust/crasher.rs is built here with the machine's rustc, once per mangling scheme (v0, and
# legacy, which stable rustc allows only with -Z unstable-options: RUSTC_BOOTSTRAP=1); every
# symbol of each binary (std's, statically linked, included) and of the toolchain's own shared
# libraries (librustc_driver: some 100,000 v0 names) is demangled by fl_demangle_rust (names.c)
# and by c++filt (full form) and c++filt -i (simplified form), line by line: any difference
# fails, and names that are not Rust must be declined. `faultline demangle` gives the same. Then
# the binaries crash under `faultline run`: show (text, apple, tombstone, json), symbolicate
# FILE ADDR and triage print the names c++filt gives for the frames' link names; two builds whose
# hashes differ make one triage group.
import json
import os
import random
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tooltest import check, finish, run, setup  # noqa: E402

args = setup("--names", "--rustc", "--preload", "--source")
W = args.workdir
LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E(\.[A-Za-z0-9_.$@]*)?$")


def build(name, scheme, metadata="one"):
    out = os.path.join(W, name)
    env = dict(os.environ)
    flags = ["-C", f"symbol-mangling-version={scheme}"]
    if scheme == "legacy":
        env["RUSTC_BOOTSTRAP"] = "1"  # stable rustc takes legacy only as an unstable option
        flags = ["-Z", "unstable-options"] + flags
    run([args.rustc, *flags, "-C", "opt-level=0", "-g", "-C", "force-frame-pointers=yes",
         "-C", f"metadata={metadata}", "-o", out, args.source], env=env, timeout=600)
    return out


def symbols(path):
    out = run(["nm", "-a", path], check_rc=False).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if len(line.split()) >= 2})


def filt(names, *opts):
    r = run(["c++filt", *opts], input="\n".join(names) + "\n", timeout=600)
    return r.stdout.split("\n")[: len(names)]


def ours(names, *opts, cmd=None):
    r = run(cmd or [args.names, *opts], input="\n".join(names) + "\n", timeout=600)
    return r.stdout.split("\n")[: len(names)]


def scheme(name):
    return "v0" if name.startswith("_R") else "legacy" if LEGACY.match(name) else None


def compare(what, names):
    """Both forms of every name against c++filt; counts per scheme."""
    rust = [n for n in names if scheme(n)]
    other = [n for n in names if not scheme(n)]
    counts = {"v0": sum(scheme(n) == "v0" for n in rust), "legacy": sum(scheme(n) == "legacy" for n in rust)}
    suffixed = sum(bool(re.search(r"^_R[^.]*\.|E\.[A-Za-z0-9_.$@]*$", n)) for n in rust)
    for opts, form in (((), "full"), (("-i",), "simplified")):
        want = filt(rust, *opts)
        got = ours(rust, *(("--simplified",) if opts else ()))
        bad = [(n, w, g) for n, w, g in zip(rust, want, got) if w != g]
        check(len(got) == len(rust) and not bad,
              f"{what}: {form}: {len(bad)} of {len(rust)} differ from c++filt {' '.join(opts)}")
        for n, w, g in bad[:5]:
            print(f"  {n}\n    c++filt: {w[:300]}\n    ours:    {g[:300]}")
        if form == "full":
            raw = sum(n == w for n, w in zip(rust, want))
            check(raw * 1000 <= len(rust), f"{what}: c++filt left {raw} of {len(rust)} Rust names as they are")
    declined = ours(other)
    taken = [n for n, g in zip(other, declined) if n != g]
    check(not taken, f"{what}: {len(taken)} names that are not Rust demangled: {taken[:5]}")
    print(f"{what}: {counts['v0']} v0 and {counts['legacy']} legacy names ({suffixed} with a '.' "
          f"suffix) equal to c++filt in both forms; {len(other)} other names declined", flush=True)
    return counts


# ---- The oracle: every symbol of the binaries ----
v0 = build("crasher-v0", "v0")
legacy = build("crasher-legacy", "legacy")
total = {"v0": 0, "legacy": 0}
all_rust = []
for path in (v0, legacy):
    all_rust += [n for n in symbols(path) if scheme(n)]
    c = compare(os.path.basename(path), symbols(path))
    for k in total:
        total[k] += c[k]
check(total["legacy"] > 300, f"legacy names of the crate compared: {total['legacy']}")
check(total["v0"] > 1000, f"v0 names compared: {total['v0']}")
sysroot = run([args.rustc, "--print", "sysroot"]).stdout.strip()
libdir = os.path.join(sysroot, "lib")
for f in sorted(os.listdir(libdir)) if os.path.isdir(libdir) else []:
    if re.match(r"^lib(std|rustc_driver)-.*\.so$", f):
        syms = symbols(os.path.join(libdir, f))
        compare(f, syms)
        all_rust += [n for n in syms if scheme(n)]

# Damaged names: 60,000 copies of real ones with one to three bytes changed, inserted or deleted
# (a fixed seed). Whatever we demangle must be what c++filt prints; we may decline a name c++filt
# prints (a backref into the middle of a token, which binutils follows into garbage), rarely.
random.seed(18)
pool = [n for n in all_rust if len(n) < 2000]
alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$."
mutants = []
for _ in range(60000):
    m = list(random.choice(pool))
    for _ in range(random.randint(1, 3)):
        p, op = random.randrange(len(m)), random.random()
        if op < 0.4:
            m[p] = random.choice(alphabet)
        elif op < 0.7:
            m.insert(p, random.choice(alphabet))
        elif len(m) > 3:
            del m[p]
    mutants.append("".join(m))
want, got = filt(mutants), ours(mutants)
wrong = [(n, w, g) for n, w, g in zip(mutants, want, got) if g != n and g != w]
declined = sum(g == n and w != n for n, w, g in zip(mutants, want, got))
check(not wrong, f"damaged names: {len(wrong)} demangled otherwise than by c++filt: {wrong[:3]}")
check(declined * 1000 <= len(mutants), f"damaged names: {declined} declined that c++filt prints")
print(f"damaged names: {len(mutants)}, {sum(g != n for n, g in zip(mutants, got))} demangled as c++filt "
      f"does, {declined} declined that c++filt prints", flush=True)

# `faultline demangle` (the CLI's dispatch) on the crate's Rust names, within its 4095-byte cut.
names = [n for n in symbols(v0) + symbols(legacy) if scheme(n)]
for opts in ((), ("-i",)):
    want = filt(names, *opts)
    got = ours(names, cmd=[args.faultline, "demangle", *(("--simplified",) if opts else ())])
    bad = [(n, w, g) for n, w, g in zip(names, want, got) if len(w) < 4096 and w != g]
    check(not bad, f"faultline demangle {' '.join(opts)}: {len(bad)} differ: {bad[:3]}")
r = run([args.faultline, "demangle", "_ZN7mycrate3foo17h0123456789abcdefE", "_ZN2ns1fEi", "plain"])
check(r.stdout == "mycrate::foo::h0123456789abcdef\nns::f(int)\nplain\n", f"demangle args: {r.stdout!r}")
r = run([args.faultline, "demangle", "--simplified", "_ZN7mycrate3foo17h0123456789abcdefE"])
check(r.stdout == "mycrate::foo\n", f"demangle --simplified: {r.stdout!r}")

# ---- A crash in a generic function's closure, under faultline run ----
def crash(prog, mode, d):
    r = subprocess.run([args.faultline, "run", "--preload", args.preload, "--report-dir", d, "--",
                        prog, mode], capture_output=True, text=True, timeout=120)
    rep = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".flr")) if os.path.isdir(d) else []
    check(r.returncode >= 128 and len(rep) == 1, f"{prog} {mode}: exit {r.returncode}, reports {rep}")
    return r, rep[-1] if rep else None


CLOSURE = {"v0": "crasher::crash_in::<u64>::{closure#0}", "legacy": "crasher::crash_in::{{closure}}"}
for prog, sch in ((v0, "v0"), (legacy, "legacy")):
    r, rep = crash(prog, "segv", os.path.join(W, f"segv-{sch}"))
    if not rep:
        continue
    doc = json.loads(run([args.faultline, "show", "--json", rep]).stdout)
    frames = doc["threads"][0]["frames"]
    mangled = [f["mangled"] for f in frames if f["mangled"] and scheme(f["mangled"])]
    check(len(mangled) >= 5, f"{sch}: Rust frames in the report: {len(mangled)}")
    full, simple = filt(mangled), filt(mangled, "-i")
    jsyms = [f["symbol"] for f in frames if f["mangled"] and scheme(f["mangled"])]
    check(jsyms == full, f"{sch}: show --json symbols are c++filt's: {list(zip(jsyms, full))[:3]}")
    check(CLOSURE[sch] in simple[:3], f"{sch}: the generic closure near the top: {simple[:3]}")
    for fmt in ("text", "apple", "tombstone"):
        text = run([args.faultline, "show", "--format", fmt, rep]).stdout
        missing = [s for s in simple if s not in text]
        check(not missing, f"{sch}: show --format {fmt} lacks c++filt -i's {missing[:3]}")
        check(not re.search(r"\b_R[A-Z]|_ZN\d", text), f"{sch}: {fmt}: a mangled name shown")
    check(all(s in r.stderr for s in simple), f"{sch}: faultline run's own report shows the names")
    # symbolicate FILE ADDR: the closure's address from nm.
    nm = [line.split() for line in run(["nm", prog]).stdout.splitlines() if len(line.split()) == 3]
    addr = next(f[0] for f, s in zip(nm, filt([f[2] for f in nm], "-i")) if s == CLOSURE[sch])
    got = run([args.faultline, "symbolicate", "--no-cache", prog, addr]).stdout.strip()
    check(got == CLOSURE[sch] + " + 0", f"{sch}: symbolicate {addr}: {got!r}")

r, rep = crash(v0, "abort", os.path.join(W, "abort-v0"))
if rep:
    text = run([args.faultline, "show", rep]).stdout
    check("crasher::do_abort" in text and "std::process::abort" in text, f"abort: names in\n{text[:2000]}")

# A stack overflow: std installs its own handler only where it finds SIG_DFL (which the library
# answers, docs/preload.md), says so and aborts; the report records the fault it was handling,
# and the signature starts at that fault, in the recursion.
d = os.path.join(W, "overflow-v0")
r, rep = crash(v0, "overflow", d)
if rep:
    doc = json.loads(run([args.faultline, "show", "--json", rep]).stdout)
    isig = doc.get("interrupted_signal") or {}
    check(r.returncode == 128 + signal.SIGABRT and "has overflowed its stack" in r.stderr and
          doc["signal"]["name"] == "SIGABRT" and isig.get("name") == "SIGSEGV",
          f"overflow: std's message, death by SIGABRT ({r.returncode}), while handling SIGSEGV "
          f"({doc['signal']['name']}, {isig}): {r.stderr[:300]!r}")
    g = json.loads(run([args.faultline, "triage", "--json", "--no-progress", rep]).stdout)
    sig = g[0]["signature"] if g else ""
    check(sig.startswith("crasher::deep"), f"overflow: the signature starts in the recursion ({sig!r})")

# ---- Triage: two builds whose hashes differ make one group ----
for sch in ("v0", "legacy"):
    d = os.path.join(W, f"triage-{sch}")
    progs = [v0 if sch == "v0" else legacy, build(f"crasher-{sch}-2", sch, metadata="two")]
    raw = []
    for i, p in enumerate(progs):
        crash(p, "segv", os.path.join(d, str(i)))
        names = symbols(p)
        raw.append({n for n, s in zip(names, filt(names, "-i")) if s == CLOSURE[sch]})
    check(raw[0] and raw[1] and not raw[0] & raw[1], f"{sch}: the closure's link names differ: {raw}")
    reports = [os.path.join(d, s, f) for s in ("0", "1") for f in os.listdir(os.path.join(d, s))
               if f.endswith(".flr")]  # (not the run markers, .run-*)
    r = run([args.faultline, "triage", "--json", "--no-progress", *reports])
    groups = json.loads(r.stdout)
    check(len(groups) == 1 and groups[0]["count"] == 2,
          f"{sch}: one group of 2: {[(g['signature'], g['count']) for g in groups]}")
    if groups:
        sig = groups[0]["signature"]
        check(CLOSURE[sch].replace("<u64>", "<T>") in sig and not re.search(r"\[[0-9a-f]+\]|::h[0-9a-f]{16}", sig),
              f"{sch}: signature {sig!r}")
        st = groups[0]["stack"]
        check(any(f["mangled"] and f["symbol"] == filt([f["mangled"]])[0] and f["symbol"] != f["mangled"]
                  for f in st), f"{sch}: triage --json gives full names and link names")

finish()
