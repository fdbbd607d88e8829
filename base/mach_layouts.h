/* SPDX-License-Identifier: MIT */
/* Apple's layouts that faultline reads (LP64, little-endian), in fixed-width types for every platform. */
#ifndef FAULTLINE_BASE_MACH_LAYOUTS_H
#define FAULTLINE_BASE_MACH_LAYOUTS_H

/* Each definition here is checked, field by field, against Apple's own declaration by
 * tests/darwin/apple_layouts.c, which includes this header and the Apple headers zig ships and is
 * compiled for x86_64-macos and aarch64-macos (CTest darwin_layouts): a drift is a compile error.
 * The same file builds instances with Apple's types that tests on Linux feed to the parsers. */

#include <stdint.h>

/* ---- dyld: struct dyld_all_image_infos and struct dyld_image_info (<mach-o/dyld_images.h>;
 * zig ships no copy, so the check transcribes dyld's declaration) ---- */
enum {
    FL_DYLD_INFOS_VERSION = 0,      /* uint32_t version */
    FL_DYLD_INFOS_COUNT = 4,        /* uint32_t infoArrayCount */
    FL_DYLD_INFOS_ARRAY = 8,        /* const struct dyld_image_info *infoArray: NULL while changing */
    FL_DYLD_INFOS_DYLD_HEADER = 32, /* const struct mach_header *dyldImageLoadAddress (version 2+) */
    FL_DYLD_INFOS_TIMESTAMP = 184,  /* uint64_t infoArrayChangeTimestamp (version 15+, macOS 10.12) */
    FL_DYLD_INFOS_DYLD_PATH = 192,  /* const char *dyldPath (version 15+) */
    FL_DYLD_INFOS_V15_SIZE = 200    /* the structure up to dyldPath */
};
typedef struct fl_dyld_image_info { /* struct dyld_image_info */
    uint64_t load_address;          /* const struct mach_header *imageLoadAddress */
    uint64_t file_path;             /* const char *imageFilePath */
    uint64_t file_mod_date;         /* uintptr_t imageFileModDate */
} fl_dyld_image_info_t;

/* ---- Mach messages (<mach/message.h>, <mach/ndr.h>) ---- */
typedef struct fl_mach_msg_header { /* mach_msg_header_t */
    uint32_t bits, size, remote_port, local_port, voucher_port;
    int32_t id;
} fl_mach_msg_header_t;
/* mach_msg_port_descriptor_t: name, pad1, then one 32-bit word of bit-fields pad2:16,
 * disposition:8, type:8 (allocated from the low bits: bytes 8-9, 10 and 11). */
typedef struct fl_mach_port_descriptor {
    uint32_t name, pad1;
    uint16_t pad2;
    uint8_t disposition, type;
} fl_mach_port_descriptor_t;
#define FL_MACH_MSGH_BITS_COMPLEX 0x80000000u
#define FL_MACH_MSGH_BITS_REMOTE_MASK 0x1fu
#define FL_MACH_MSG_PORT_DESCRIPTOR 0u
#define FL_MACH_NDR_SIZE 8u /* NDR_record_t: eight bytes */

/* MIG's mach_exc subsystem (osfmk/mach/mach_exc.defs; zig ships no <mach/mach_exc.h>):
 * mach_exception_raise as the kernel sends it for EXCEPTION_DEFAULT | MACH_EXCEPTION_CODES, and
 * its reply. MIG packs both to 4 bytes. */
#define FL_MACH_EXCEPTION_RAISE_ID 2405 /* mach_exc's subsystem base */
#define FL_MIG_REPLY_ID_OFFSET 100      /* a MIG reply's msgh_id is the request's + 100 */
#define FL_MACH_EXCEPTION_CODE_MAX 2u   /* EXCEPTION_CODE_MAX */
#pragma pack(push, 4)
typedef struct fl_mach_exc_request { /* __Request__mach_exception_raise_t */
    fl_mach_msg_header_t head;
    uint32_t descriptor_count;       /* mach_msg_body_t */
    fl_mach_port_descriptor_t thread, task;
    uint8_t ndr[FL_MACH_NDR_SIZE];
    int32_t exception;               /* exception_type_t */
    uint32_t code_count;             /* mach_msg_type_number_t codeCnt */
    int64_t code[FL_MACH_EXCEPTION_CODE_MAX];
} fl_mach_exc_request_t;
typedef struct fl_mach_exc_reply {   /* __Reply__mach_exception_raise_t */
    fl_mach_msg_header_t head;
    uint8_t ndr[FL_MACH_NDR_SIZE];
    int32_t ret;                     /* kern_return_t RetCode */
} fl_mach_exc_reply_t;
#pragma pack(pop)
_Static_assert(sizeof(fl_mach_exc_request_t) == 84 && sizeof(fl_mach_exc_reply_t) == 36, "MIG");

/* Values of <mach/exception_types.h>, <mach/kern_return.h>, <mach/i386/exception.h>. */
enum {
    FL_EXC_BAD_ACCESS = 1, FL_EXC_BAD_INSTRUCTION = 2, FL_EXC_ARITHMETIC = 3,
    FL_EXC_SOFTWARE = 5, FL_EXC_BREAKPOINT = 6, FL_EXC_GUARD = 12
};
#define FL_EXC_UNIX_BAD_SYSCALL 0x10000u
#define FL_EXC_UNIX_BAD_PIPE 0x10001u
#define FL_EXC_UNIX_ABORT 0x10002u
#define FL_EXC_SOFT_SIGNAL 0x10003u
#define FL_KERN_INVALID_ADDRESS 1u
#define FL_EXC_I386_GPFLT 13u

/* ---- Thread state flavours (<mach/i386/_structs.h>, <mach/arm/_structs.h>) ---- */
typedef struct fl_mach_x86_thread_state64 { /* x86_THREAD_STATE64 (flavor 4) */
    uint64_t rax, rbx, rcx, rdx, rdi, rsi, rbp, rsp, r8, r9, r10, r11, r12, r13, r14, r15;
    uint64_t rip, rflags, cs, fs, gs;
} fl_mach_x86_thread_state64_t;
typedef struct fl_mach_x86_exception_state64 { /* x86_EXCEPTION_STATE64 (flavor 6) */
    uint16_t trapno, cpu;
    uint32_t err;
    uint64_t faultvaddr;
} fl_mach_x86_exception_state64_t;
typedef struct fl_mach_arm_thread_state64 { /* ARM_THREAD_STATE64 (flavor 6), not arm64e's */
    uint64_t x[29], fp, lr, sp, pc;
    uint32_t cpsr, pad;
} fl_mach_arm_thread_state64_t;
#define FL_MACH_X86_THREAD_STATE64 4
#define FL_MACH_X86_EXCEPTION_STATE64 6
#define FL_MACH_ARM_THREAD_STATE64 6

#endif
