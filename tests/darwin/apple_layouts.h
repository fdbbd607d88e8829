/* SPDX-License-Identifier: MIT */
/* What tests/darwin/apple_layouts.c puts into its instances, for the Linux tests that read them. */
#ifndef FAULTLINE_TESTS_APPLE_LAYOUTS_H
#define FAULTLINE_TESTS_APPLE_LAYOUTS_H

/* A fake address space for dyld's structures: [FIX_BASE, FIX_BASE + FIX_SIZE). */
#define FIX_BASE 0x100000000ull
#define FIX_SIZE 0x100000ull
#define FIX_INFOS (FIX_BASE + 0x1000)     /* dyld_all_image_infos */
#define FIX_ARRAY (FIX_BASE + 0x2000)     /* dyld_image_info[FIX_COUNT] */
#define FIX_COUNT 3                       /* two images, the first listed twice */
#define FIX_IMG0 (FIX_BASE + 0x10000)     /* MH_EXECUTE, __TEXT 0x4000 bytes, UUID 0x11.. */
#define FIX_IMG1 (FIX_BASE + 0x20000)     /* MH_DYLIB, __TEXT 0x8000 bytes, UUID 0x22.. */
#define FIX_DYLD (FIX_BASE + 0x30000)     /* MH_DYLINKER, __TEXT 0x2000 bytes, UUID 0x33.. */
#define FIX_PATH0 (FIX_BASE + 0xf000)     /* the paths, written by the tests */
#define FIX_PATH1 (FIX_BASE + 0xf100)
#define FIX_DYLD_PATH (FIX_BASE + 0xf200)
#define FIX_TEXT_VMADDR 0x100000000ull    /* every image's unslid __TEXT */
#define FIX_STAMP 7u                      /* infoArrayChangeTimestamp (infos15b: 8) */
#define FIX_BIG_COUNT 100000u             /* infobig's infoArrayCount */

/* Mach exception messages. */
#define FIX_REPLY_PORT 0x1103u
#define FIX_LOCAL_PORT 0x2207u
#define FIX_THREAD_PORT 0x1503u
#define FIX_TASK_PORT 0x203u
#define FIX_FAULT_ADDR 0xdeadbeef0ull

/* Thread states: each 64-bit register holds its name packed big-endian into the low bytes
 * ("rax" = 0x726178), except arm64's x<n> = 0xa000 + n. */
#define FIX_X86_TRAPNO 14u
#define FIX_X86_CPU 3u
#define FIX_X86_ERR 6u
#define FIX_X86_CR2 0xdead0000ull

#endif
