/* SPDX-License-Identifier: MIT */
/* Apple's layouts against base/mach_layouts.h, compiled by zig for macOS; and instances for Linux tests. */
/* Built by build_layouts.sh with `zig cc -target {x86_64,aarch64}-macos -c` (never linked or run):
 * (1) every size, offset and constant the project's layouts declare is _Static_assert'ed against
 * Apple's headers as zig ships them, so a drift fails the build (CTest darwin_layouts); where zig
 * ships no header (dyld_images.h, mach_exc.h's MIG structs, sys/ux_exception.h) the declaration is
 * transcribed below from Apple's open-source dyld, xnu and MIG output, built from Apple's types.
 * (2) instances built with Apple's types go into sections __DATA,<name>, which build_layouts.sh
 * dumps to <name>.bin for tests/macho/test_dyld_images.c and tests/crash/test_mach_exc.c. */
#include <mach-o/loader.h>
#include <mach/mach.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mach_layouts.h"
#include "tests/darwin/apple_layouts.h"

#define SAME(apple_t, apple_f, ours_t, ours_f)                                                  \
    _Static_assert(offsetof(apple_t, apple_f) == offsetof(ours_t, ours_f) &&                    \
                       sizeof(((apple_t *)0)->apple_f) == sizeof(((ours_t *)0)->ours_f),        \
                   #apple_t "." #apple_f)
#define AT(apple_t, apple_f, off, size)                                                         \
    _Static_assert(offsetof(apple_t, apple_f) == (off) && sizeof(((apple_t *)0)->apple_f) == (size), \
                   #apple_t "." #apple_f)
#define FIX(name) __attribute__((used, section("__DATA," name)))

/* ---- dyld (<mach-o/dyld_images.h>, transcribed: zig ships none) ---- */
struct dyld_image_info {
    const struct mach_header *imageLoadAddress;
    const char *imageFilePath;
    uintptr_t imageFileModDate;
};
struct dyld_uuid_info;
typedef void (*dyld_image_notifier)(int mode, uint32_t infoCount, const struct dyld_image_info info[]);
struct dyld_all_image_infos { /* through version 15's fields */
    uint32_t version;
    uint32_t infoArrayCount;
    const struct dyld_image_info *infoArray;
    dyld_image_notifier notification;
    bool processDetachedFromSharedRegion;
    bool libSystemInitialized;
    const struct mach_header *dyldImageLoadAddress;
    void *jitInfo;
    const char *dyldVersion;
    const char *errorMessage;
    uintptr_t terminationFlags;
    void *coreSymbolicationShmPage;
    uintptr_t systemOrderFlag;
    uintptr_t uuidArrayCount;
    const struct dyld_uuid_info *uuidArray;
    struct dyld_all_image_infos *dyldAllImageInfosAddress;
    uintptr_t initialImageCount;
    uintptr_t errorKind;
    const char *errorClientOfDylibPath;
    const char *errorTargetDylibPath;
    const char *errorSymbol;
    uintptr_t sharedCacheSlide;
    uint8_t sharedCacheUUID[16];
    uintptr_t sharedCacheBaseAddress;
    uint64_t infoArrayChangeTimestamp;
    const char *dyldPath;
    mach_port_t notifyPorts[8];
    uintptr_t reserved[9];
};
AT(struct dyld_all_image_infos, version, FL_DYLD_INFOS_VERSION, 4);
AT(struct dyld_all_image_infos, infoArrayCount, FL_DYLD_INFOS_COUNT, 4);
AT(struct dyld_all_image_infos, infoArray, FL_DYLD_INFOS_ARRAY, 8);
AT(struct dyld_all_image_infos, dyldImageLoadAddress, FL_DYLD_INFOS_DYLD_HEADER, 8);
AT(struct dyld_all_image_infos, infoArrayChangeTimestamp, FL_DYLD_INFOS_TIMESTAMP, 8);
AT(struct dyld_all_image_infos, dyldPath, FL_DYLD_INFOS_DYLD_PATH, 8);
_Static_assert(offsetof(struct dyld_all_image_infos, dyldPath) + 8 == FL_DYLD_INFOS_V15_SIZE, "v15");
_Static_assert(sizeof(struct dyld_image_info) == sizeof(fl_dyld_image_info_t), "dyld_image_info");
SAME(struct dyld_image_info, imageLoadAddress, fl_dyld_image_info_t, load_address);
SAME(struct dyld_image_info, imageFilePath, fl_dyld_image_info_t, file_path);
SAME(struct dyld_image_info, imageFileModDate, fl_dyld_image_info_t, file_mod_date);
/* What images_darwin.c asks the kernel for (<mach/task_info.h>). */
_Static_assert(TASK_DYLD_ALL_IMAGE_INFO_64 == 1 && sizeof(mach_vm_address_t) == 8, "task_dyld_info");

/* ---- Mach messages (<mach/message.h>, <mach/ndr.h>) ---- */
_Static_assert(sizeof(mach_msg_header_t) == sizeof(fl_mach_msg_header_t), "mach_msg_header_t");
SAME(mach_msg_header_t, msgh_bits, fl_mach_msg_header_t, bits);
SAME(mach_msg_header_t, msgh_size, fl_mach_msg_header_t, size);
SAME(mach_msg_header_t, msgh_remote_port, fl_mach_msg_header_t, remote_port);
SAME(mach_msg_header_t, msgh_local_port, fl_mach_msg_header_t, local_port);
SAME(mach_msg_header_t, msgh_voucher_port, fl_mach_msg_header_t, voucher_port);
SAME(mach_msg_header_t, msgh_id, fl_mach_msg_header_t, id);
/* The descriptor's bit-fields (disposition, type) have no offsetof: their bytes are checked at
 * run time, by instances whose disposition and type differ (exc_ok, exc_ool). */
_Static_assert(sizeof(mach_msg_port_descriptor_t) == sizeof(fl_mach_port_descriptor_t), "desc");
SAME(mach_msg_port_descriptor_t, name, fl_mach_port_descriptor_t, name);
SAME(mach_msg_port_descriptor_t, pad1, fl_mach_port_descriptor_t, pad1);
_Static_assert(sizeof(NDR_record_t) == FL_MACH_NDR_SIZE && sizeof(mach_msg_body_t) == 4, "NDR, body");
_Static_assert(MACH_MSGH_BITS_COMPLEX == FL_MACH_MSGH_BITS_COMPLEX &&
                   MACH_MSGH_BITS_REMOTE_MASK == FL_MACH_MSGH_BITS_REMOTE_MASK &&
                   MACH_MSG_PORT_DESCRIPTOR == FL_MACH_MSG_PORT_DESCRIPTOR,
               "message constants");

/* MIG's mach_exc.h (generated from osfmk/mach/mach_exc.defs; zig ships none), transcribed. */
#pragma pack(push, 4)
typedef struct {
    mach_msg_header_t Head;
    mach_msg_body_t msgh_body;
    mach_msg_port_descriptor_t thread;
    mach_msg_port_descriptor_t task;
    NDR_record_t NDR;
    exception_type_t exception;
    mach_msg_type_number_t codeCnt;
    int64_t code[2];
} __Request__mach_exception_raise_t;
typedef struct {
    mach_msg_header_t Head;
    NDR_record_t NDR;
    kern_return_t RetCode;
} __Reply__mach_exception_raise_t;
#pragma pack(pop)
#define REQ __Request__mach_exception_raise_t
_Static_assert(sizeof(REQ) == sizeof(fl_mach_exc_request_t), "mach_exception_raise request");
SAME(REQ, Head, fl_mach_exc_request_t, head);
SAME(REQ, msgh_body, fl_mach_exc_request_t, descriptor_count);
SAME(REQ, thread, fl_mach_exc_request_t, thread);
SAME(REQ, task, fl_mach_exc_request_t, task);
SAME(REQ, NDR, fl_mach_exc_request_t, ndr);
SAME(REQ, exception, fl_mach_exc_request_t, exception);
SAME(REQ, codeCnt, fl_mach_exc_request_t, code_count);
SAME(REQ, code, fl_mach_exc_request_t, code);
_Static_assert(sizeof(((REQ *)0)->code[0]) == sizeof(mach_exception_data_type_t), "64-bit codes");
_Static_assert(sizeof(__Reply__mach_exception_raise_t) == sizeof(fl_mach_exc_reply_t), "reply");
SAME(__Reply__mach_exception_raise_t, Head, fl_mach_exc_reply_t, head);
SAME(__Reply__mach_exception_raise_t, NDR, fl_mach_exc_reply_t, ndr);
SAME(__Reply__mach_exception_raise_t, RetCode, fl_mach_exc_reply_t, ret);
_Static_assert(EXCEPTION_CODE_MAX == FL_MACH_EXCEPTION_CODE_MAX, "EXCEPTION_CODE_MAX");

/* Exception types and codes (<mach/exception_types.h>, <mach/kern_return.h>; the EXC_UNIX_*
 * codes of xnu's <sys/ux_exception.h>, which zig does not ship, are transcribed). */
_Static_assert(EXC_BAD_ACCESS == FL_EXC_BAD_ACCESS && EXC_BAD_INSTRUCTION == FL_EXC_BAD_INSTRUCTION &&
                   EXC_ARITHMETIC == FL_EXC_ARITHMETIC && EXC_SOFTWARE == FL_EXC_SOFTWARE &&
                   EXC_BREAKPOINT == FL_EXC_BREAKPOINT && EXC_GUARD == FL_EXC_GUARD &&
                   EXC_SOFT_SIGNAL == FL_EXC_SOFT_SIGNAL &&
                   KERN_INVALID_ADDRESS == FL_KERN_INVALID_ADDRESS,
               "exception constants");
#define EXC_UNIX_BAD_SYSCALL 0x10000
#define EXC_UNIX_BAD_PIPE 0x10001
#define EXC_UNIX_ABORT 0x10002
_Static_assert(EXC_UNIX_BAD_SYSCALL == FL_EXC_UNIX_BAD_SYSCALL && EXC_UNIX_BAD_PIPE == FL_EXC_UNIX_BAD_PIPE &&
                   EXC_UNIX_ABORT == FL_EXC_UNIX_ABORT, "EXC_UNIX_*");

/* ---- Thread states (<mach/i386/_structs.h>, <mach/arm/_structs.h>) ---- */
#define NV2(a, b) ((uint64_t)(a) << 8 | (b))
#define NV3(a, b, c) (NV2(a, b) << 8 | (c))
#define NV4(a, b, c, d) (NV3(a, b, c) << 8 | (d))
#define NV6(a, b, c, d, e, f) (NV4(a, b, c, d) << 16 | NV2(e, f))
#if defined(__x86_64__)
#define X86(f) SAME(x86_thread_state64_t, __##f, fl_mach_x86_thread_state64_t, f)
X86(rax); X86(rbx); X86(rcx); X86(rdx); X86(rdi); X86(rsi); X86(rbp); X86(rsp);
X86(r8); X86(r9); X86(r10); X86(r11); X86(r12); X86(r13); X86(r14); X86(r15);
X86(rip); X86(rflags); X86(cs); X86(fs); X86(gs);
_Static_assert(sizeof(x86_thread_state64_t) == sizeof(fl_mach_x86_thread_state64_t), "ss");
SAME(x86_exception_state64_t, __trapno, fl_mach_x86_exception_state64_t, trapno);
SAME(x86_exception_state64_t, __cpu, fl_mach_x86_exception_state64_t, cpu);
SAME(x86_exception_state64_t, __err, fl_mach_x86_exception_state64_t, err);
SAME(x86_exception_state64_t, __faultvaddr, fl_mach_x86_exception_state64_t, faultvaddr);
_Static_assert(sizeof(x86_exception_state64_t) == sizeof(fl_mach_x86_exception_state64_t), "es");
_Static_assert(x86_THREAD_STATE64 == FL_MACH_X86_THREAD_STATE64 &&
                   x86_EXCEPTION_STATE64 == FL_MACH_X86_EXCEPTION_STATE64 &&
                   x86_THREAD_STATE64_COUNT == sizeof(fl_mach_x86_thread_state64_t) / 4 &&
                   x86_EXCEPTION_STATE64_COUNT == sizeof(fl_mach_x86_exception_state64_t) / 4 &&
                   EXC_I386_GPFLT == FL_EXC_I386_GPFLT,
               "x86 flavours");
FIX("x86ss") x86_thread_state64_t fix_x86ss = {
    .__rax = NV3('r', 'a', 'x'), .__rbx = NV3('r', 'b', 'x'), .__rcx = NV3('r', 'c', 'x'),
    .__rdx = NV3('r', 'd', 'x'), .__rdi = NV3('r', 'd', 'i'), .__rsi = NV3('r', 's', 'i'),
    .__rbp = NV3('r', 'b', 'p'), .__rsp = NV3('r', 's', 'p'), .__r8 = NV2('r', '8'),
    .__r9 = NV2('r', '9'), .__r10 = NV3('r', '1', '0'), .__r11 = NV3('r', '1', '1'),
    .__r12 = NV3('r', '1', '2'), .__r13 = NV3('r', '1', '3'), .__r14 = NV3('r', '1', '4'),
    .__r15 = NV3('r', '1', '5'), .__rip = NV3('r', 'i', 'p'),
    .__rflags = NV6('r', 'f', 'l', 'a', 'g', 's'), .__cs = NV2('c', 's'), .__fs = NV2('f', 's'),
    .__gs = NV2('g', 's')};
FIX("x86es") x86_exception_state64_t fix_x86es = {
    .__trapno = FIX_X86_TRAPNO, .__cpu = FIX_X86_CPU, .__err = FIX_X86_ERR,
    .__faultvaddr = FIX_X86_CR2};
#define FIX_CPUTYPE CPU_TYPE_X86_64
#else
_Static_assert(offsetof(arm_thread_state64_t, __x) == offsetof(fl_mach_arm_thread_state64_t, x) &&
                   sizeof(((arm_thread_state64_t *)0)->__x) == sizeof(((fl_mach_arm_thread_state64_t *)0)->x),
               "arm_thread_state64_t.__x");
SAME(arm_thread_state64_t, __fp, fl_mach_arm_thread_state64_t, fp);
SAME(arm_thread_state64_t, __lr, fl_mach_arm_thread_state64_t, lr);
SAME(arm_thread_state64_t, __sp, fl_mach_arm_thread_state64_t, sp);
SAME(arm_thread_state64_t, __pc, fl_mach_arm_thread_state64_t, pc);
SAME(arm_thread_state64_t, __cpsr, fl_mach_arm_thread_state64_t, cpsr);
SAME(arm_thread_state64_t, __pad, fl_mach_arm_thread_state64_t, pad);
_Static_assert(sizeof(arm_thread_state64_t) == sizeof(fl_mach_arm_thread_state64_t) &&
                   ARM_THREAD_STATE64 == FL_MACH_ARM_THREAD_STATE64 &&
                   ARM_THREAD_STATE64_COUNT == sizeof(fl_mach_arm_thread_state64_t) / 4,
               "arm flavour");
#define X(n) [n] = 0xa000 + n
FIX("armss") arm_thread_state64_t fix_armss = {
    .__x = {X(0), X(1), X(2), X(3), X(4), X(5), X(6), X(7), X(8), X(9), X(10), X(11), X(12),
            X(13), X(14), X(15), X(16), X(17), X(18), X(19), X(20), X(21), X(22), X(23), X(24),
            X(25), X(26), X(27), X(28)},
    .__fp = NV2('f', 'p'), .__lr = NV2('l', 'r'), .__sp = NV2('s', 'p'), .__pc = NV2('p', 'c'),
    .__cpsr = (uint32_t)NV4('c', 'p', 's', 'r')};
#define FIX_CPUTYPE CPU_TYPE_ARM64
#endif

/* ---- Instances: dyld's list (addresses of tests/darwin/apple_layouts.h) ---- */
#define P(a) ((const void *)(uintptr_t)(a))
#define INFOS(ver, count, array, stamp)                                                          \
    {.version = (ver), .infoArrayCount = (count), .infoArray = (array),                           \
     .dyldImageLoadAddress = P(FIX_DYLD), .infoArrayChangeTimestamp = (stamp),                  \
     .dyldPath = P(FIX_DYLD_PATH), .libSystemInitialized = true}
FIX("infos15") struct dyld_all_image_infos fix_infos15 = INFOS(15, FIX_COUNT, P(FIX_ARRAY), FIX_STAMP);
FIX("infos15b") struct dyld_all_image_infos fix_infos15b = INFOS(15, FIX_COUNT, P(FIX_ARRAY), FIX_STAMP + 1);
FIX("infosnull") struct dyld_all_image_infos fix_infosnull = INFOS(15, FIX_COUNT, NULL, FIX_STAMP);
FIX("infobig") struct dyld_all_image_infos fix_infobig = INFOS(15, FIX_BIG_COUNT, P(FIX_ARRAY), FIX_STAMP);
FIX("infos1") struct dyld_all_image_infos fix_infos1 = INFOS(1, FIX_COUNT, P(FIX_ARRAY), 0);
FIX("array") struct dyld_image_info fix_array[FIX_COUNT] = {
    {P(FIX_IMG0), P(FIX_PATH0), 1}, {P(FIX_IMG1), P(FIX_PATH1), 2}, {P(FIX_IMG0), P(FIX_PATH0), 1}};

/* A loaded image's header: mach_header_64, LC_SEGMENT_64 __TEXT, LC_UUID. */
struct image {
    struct mach_header_64 h;
    struct segment_command_64 text;
    struct uuid_command uuid;
};
#define IMAGE(type, size, u)                                                                     \
    {.h = {.magic = MH_MAGIC_64, .cputype = FIX_CPUTYPE, .filetype = (type), .ncmds = 2,         \
           .sizeofcmds = sizeof(struct segment_command_64) + sizeof(struct uuid_command)},       \
     .text = {.cmd = LC_SEGMENT_64, .cmdsize = sizeof(struct segment_command_64),                \
              .segname = SEG_TEXT, .vmaddr = FIX_TEXT_VMADDR, .vmsize = (size),                  \
              .filesize = (size), .maxprot = 5, .initprot = 5},                                  \
     .uuid = {.cmd = LC_UUID, .cmdsize = sizeof(struct uuid_command),                            \
              .uuid = {u, u, u, u, u, u, u, u, u, u, u, u, u, u, u, u}}}
FIX("img0") struct image fix_img0 = IMAGE(MH_EXECUTE, 0x4000, 0x11);
FIX("img1") struct image fix_img1 = IMAGE(MH_DYLIB, 0x8000, 0x22);
FIX("dyldimg") struct image fix_dyldimg = IMAGE(MH_DYLINKER, 0x2000, 0x33);

/* ---- Instances: mach_exception_raise requests and the reply ---- */
#define DESC(port, t) {.name = (port), .disposition = MACH_MSG_TYPE_MOVE_SEND, .type = (t)}
#define EXC(bits, cnt, t, exc, c0, c1)                                                           \
    {.Head = {.msgh_bits = (bits), .msgh_size = sizeof(REQ), .msgh_remote_port = FIX_REPLY_PORT, \
              .msgh_local_port = FIX_LOCAL_PORT, .msgh_id = 2405},                               \
     .msgh_body = {.msgh_descriptor_count = 2}, .thread = DESC(FIX_THREAD_PORT, t),              \
     .task = DESC(FIX_TASK_PORT, MACH_MSG_PORT_DESCRIPTOR),                                      \
     .NDR = {.int_rep = NDR_INT_LITTLE_ENDIAN /* as NDR_record */}, .exception = (exc),       \
     .codeCnt = (cnt), .code = {(c0), (c1)}}
#define BITS MACH_MSGH_BITS_SET(MACH_MSG_TYPE_MOVE_SEND_ONCE, 0, 0, MACH_MSGH_BITS_COMPLEX)
#define PORT MACH_MSG_PORT_DESCRIPTOR
FIX("exc_ok") REQ fix_exc_ok = EXC(BITS, 2, PORT, EXC_BAD_ACCESS, KERN_INVALID_ADDRESS, FIX_FAULT_ADDR);
FIX("exc_prot") REQ fix_exc_prot = EXC(BITS, 2, PORT, EXC_BAD_ACCESS, KERN_PROTECTION_FAILURE, FIX_FAULT_ADDR);
FIX("exc_gpflt") REQ fix_exc_gpflt = EXC(BITS, 2, PORT, EXC_BAD_ACCESS, 13, 0);
FIX("exc_ill") REQ fix_exc_ill = EXC(BITS, 2, PORT, EXC_BAD_INSTRUCTION, 1, 0);
FIX("exc_fpe") REQ fix_exc_fpe = EXC(BITS, 2, PORT, EXC_ARITHMETIC, 1, 0);
FIX("exc_brk") REQ fix_exc_brk = EXC(BITS, 2, PORT, EXC_BREAKPOINT, 1, 0);
FIX("exc_abort") REQ fix_exc_abort = EXC(BITS, 2, PORT, EXC_SOFTWARE, EXC_UNIX_ABORT, 0);
FIX("exc_soft") REQ fix_exc_soft = EXC(BITS, 2, PORT, EXC_SOFTWARE, EXC_SOFT_SIGNAL, 0);
FIX("exc_guard") REQ fix_exc_guard = EXC(BITS, 2, PORT, EXC_GUARD, 0x1234, 0);
FIX("exc_ool") REQ fix_exc_ool = EXC(BITS, 2, MACH_MSG_OOL_DESCRIPTOR, EXC_BAD_ACCESS, 1, 0);
FIX("exc_simple") REQ fix_exc_simple = EXC(MACH_MSGH_BITS(MACH_MSG_TYPE_MOVE_SEND_ONCE, 0), 2, PORT, EXC_BAD_ACCESS, 1, 0);
FIX("exc_3codes") REQ fix_exc_3codes = EXC(BITS, 3, PORT, EXC_BAD_ACCESS, 1, 0);
FIX("exc_1code") REQ fix_exc_1code = EXC(BITS, 1, PORT, EXC_BAD_ACCESS, KERN_INVALID_ADDRESS, 0);
FIX("exc_reply") __Reply__mach_exception_raise_t fix_exc_reply = {
    .Head = {.msgh_bits = MACH_MSGH_BITS(MACH_MSGH_BITS_REMOTE(BITS), 0),
             .msgh_size = sizeof(__Reply__mach_exception_raise_t),
             .msgh_remote_port = FIX_REPLY_PORT, .msgh_id = 2405 + 100},
    .NDR = {.int_rep = NDR_INT_LITTLE_ENDIAN}, .RetCode = KERN_FAILURE};
