#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Splits a CPU profile of `bench_snapshot profile THREADS COUNT` into the capture's parts.

    perf record -e cpu-clock -F 4999 -g -o snap.data BUILD/bench/bench_snapshot profile 1000 20
    bench/perf_split.py snap.data

Only samples from the first snapshot on count (thread creation is left out). The capturing
thread is the process's main thread; every other thread is a parked one (its signal handler, the
kernel delivering and returning from the signal, waking up when released). Samples are CPU time
on any CPU, so on a 2-CPU machine the parked threads' share competes with the capturer."""
import collections
import subprocess
import sys

DETAIL = '-v' in sys.argv[2:]  # name the leaf function of 'other' samples


def samples(path):
    out = subprocess.run(['perf', 'script', '-i', path, '-F', 'tid,time,ip,sym', '--no-demangle'],
                         capture_output=True, text=True, check=True).stdout
    cur = None
    for line in out.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur = None
        elif not line.startswith('\t'):  # "TID TIME:" (the tid right-aligned); frames follow
            if cur:
                yield cur
            f = line.split()
            cur = (int(f[0]), float(f[1].rstrip(':')), [])
        elif cur:
            parts = line.split(None, 1)
            cur[2].append(parts[1] if len(parts) > 1 else '?')
    if cur:
        yield cur


def category(capturer, stack):
    s = ' '.join(stack)
    if 'bench_dir_clear' in s:
        return 'benchmark: removing the report (not capture)'
    if not capturer:
        if 'responder' in s:
            for k in ('futex_wait', 'futex_wake', 'prctl', 'getpid', 'gettid'):
                if k in s:
                    return 'parked threads: handler, ' + k
            return 'parked threads: handler, other'
        if any(k in s for k in ('sigreturn', 'get_signal', 'handle_signal', 'arch_do_signal',
                                'exit_to_user_mode')):
            return 'parked threads: kernel signal delivery and return'
        if 'futex' in s:
            return 'parked threads: futex (woken by the release)'
        return 'parked threads: other'
    if 'fl_threads_suspend' in s:
        for k, n in (('rt_tgsigqueueinfo', 'signalling'), ('getdents', 'listing /proc/self/task'),
                     ('openat', 'listing /proc/self/task'), ('futex', 'waiting for answers'),
                     ('proc_pid_status', 'SigBlk checks'), ('ksys_read', 'SigBlk checks')):
            if k in s:
                return 'capturer: suspend, ' + n
        return 'capturer: suspend, other' + (' (' + stack[0] + ')' if DETAIL else '')
    for f in ('fl_threads_release', 'fl_maps_read', 'fl_elf_images_collect',
              'fl_report_writer_finish'):
        if f in s:
            return 'capturer: ' + f
    if 'futex_wake' in s:  # the raw futex syscall leaves no user frames: the release's wake-all
        return 'capturer: fl_threads_release'
    # LLVM libunwind's frames break the frame-pointer chain: recognise the walk by its leaf.
    if 'fl_frames_walk' in s or any(x.startswith(('fl_lu', '_ZN9libunwind', 'fl_cfi', 'fl_unwind',
                                                  'fl_guard')) for x in stack):
        return 'capturer: stack walks'
    if 'fl_report_write' in s or any(x.startswith(('encode_', 'put_', 'fl_report')) for x in stack):
        return 'capturer: report encoding and writing'
    return 'capturer: other (' + stack[0] + ')' if DETAIL else 'capturer: other'


def main():
    all_samples = list(samples(sys.argv[1] if len(sys.argv) > 1 else 'perf.data'))
    main_tid = min(s[0] for s in all_samples)
    start = min(s[1] for s in all_samples if any('profile_loop' in x for x in s[2]))
    counts = collections.Counter(category(tid == main_tid, st)
                                 for tid, t, st in all_samples if t >= start)
    total = sum(counts.values())
    span = max(s[1] for s in all_samples) - start
    print(f'{total} samples over {span:.3f} s of wall time')
    print('| share | part |')
    print('|------:|------|')
    for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f'| {100 * v / total:5.1f}% | {k} |')


if __name__ == '__main__':
    main()
