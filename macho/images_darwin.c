/* SPDX-License-Identifier: MIT */
/* macho: the loaded-image list on Darwin, from dyld's all-image-infos (recorded at install). */
#include <crt_externs.h>
#include <libproc.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <mach/mach.h>
#include <unistd.h>

#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free

/* dyld's `struct dyld_all_image_infos` and `struct dyld_image_info` (<mach-o/dyld_images.h>,
 * which zig does not ship), for a 64-bit process. Only the fields read here, at their offsets;
 * each says from which version of the structure it exists. */
enum {
    INFOS_VERSION = 0,          /* uint32_t version */
    INFOS_COUNT = 4,            /* uint32_t infoArrayCount */
    INFOS_ARRAY = 8,            /* const struct dyld_image_info *infoArray: NULL while changing */
    INFOS_DYLD_HEADER = 32,     /* const struct mach_header *dyldImageLoadAddress (version 2+) */
    INFOS_TIMESTAMP = 184,      /* uint64_t infoArrayChangeTimestamp (version 15+, macOS 10.12) */
    INFOS_DYLD_PATH = 192,      /* const char *dyldPath (version 15+) */
    INFOS_V15_SIZE = 200
};
typedef struct image_info {   /* struct dyld_image_info */
    uint64_t load_address;    /* const struct mach_header *imageLoadAddress */
    uint64_t file_path;       /* const char *imageFilePath */
    uint64_t file_mod_date;   /* uintptr_t imageFileModDate */
} image_info_t;
_Static_assert(sizeof(image_info_t) == 24, "dyld_image_info on LP64");

/* Written once by fl_macho_images_prepare at install time, only read afterwards. */
static struct {
    bool prepared;
    bool exe_truncated;
    uint64_t infos;      /* address of dyld_all_image_infos */
    uint64_t infos_size;
    uint64_t exe_header; /* the main executable's mach_header_64 */
    char exe[FL_IMAGE_PATH_MAX];
} g_prep;

/* Load commands of one image are copied with one read into this buffer and parsed from there
 * (a safe read is a Mach call: ~50 of them per image otherwise). Claimed with an atomic flag;
 * a concurrent collector, which the crash module never starts, parses through `mem` instead. */
static uint8_t g_cmds[16384];
static volatile int g_cmds_busy;

int fl_macho_images_prepare(void) {
    if (fl_memory_method() == FL_MEMORY_NONE) {
        int e = fl_memory_init(FL_MEMORY_NONE);
        if (e) return e;
    }
    struct task_dyld_info info;
    mach_msg_type_number_t count = TASK_DYLD_INFO_COUNT;
    kern_return_t kr = task_info(mach_task_self(), TASK_DYLD_INFO, (task_info_t)&info, &count);
    if (kr != KERN_SUCCESS || info.all_image_info_format != TASK_DYLD_ALL_IMAGE_INFO_64)
        return FL_ENOSYS;
    g_prep.infos = info.all_image_info_addr;
    g_prep.infos_size = info.all_image_info_size;
    g_prep.exe_header = (uint64_t)(uintptr_t)_NSGetMachExecuteHeader();
    /* The kernel's path of the executable (absolute, symbolic links resolved); dyld's own copy
     * as it was given on exec otherwise. */
    char buf[FL_IMAGE_PATH_MAX];
    int n = proc_pidpath(getpid(), buf, sizeof buf);
    if (n <= 0) {
        uint32_t size = sizeof buf;
        if (_NSGetExecutablePath(buf, &size) != 0) {
            buf[0] = 0;
            g_prep.exe_truncated = true;
        }
    }
    buf[sizeof buf - 1] = 0;
    fl_strlcpy(g_prep.exe, buf, sizeof g_prep.exe);
    __atomic_store_n(&g_prep.prepared, true, __ATOMIC_RELEASE);
    return 0;
}

const char *fl_macho_exe_path(void) { return g_prep.exe; }

static fl_image_t *find_header(fl_image_list_t *out, uint64_t header) {
    for (unsigned i = 0; i < out->count; i++)
        if (out->image[i].start == header) return &out->image[i];
    return NULL;
}

/* Parses the image at `header`, preferably from one copy of its load commands. */
static int parse(const fl_reader_t *mem, uint64_t header, fl_macho_image_t *mi) {
    if (__atomic_exchange_n(&g_cmds_busy, 1, __ATOMIC_ACQUIRE))
        return fl_macho_image_init(mi, mem, header, UINT64_MAX, true);
    int e;
    uint32_t sizeofcmds;
    fl_reader_t copy;
    if (fl_read(mem, header, g_cmds, 32) == 0 && fl_read_u32(mem, header + 20, &sizeofcmds) == 0 &&
        sizeofcmds <= sizeof g_cmds - 32 && fl_read(mem, header + 32, g_cmds + 32, sizeofcmds) == 0) {
        /* A loaded image's parse reads only the header and the commands: all inside the copy. */
        fl_reader_init_buffer(&copy, g_cmds, 32 + (uint64_t)sizeofcmds, header);
        e = fl_macho_image_init(mi, &copy, header, UINT64_MAX, true);
    } else {
        e = fl_macho_image_init(mi, mem, header, UINT64_MAX, true);
    }
    __atomic_store_n(&g_cmds_busy, 0, __ATOMIC_RELEASE);
    return e;
}

/* Appends the image whose mach header is at `header`, named by the string at path_addr (or by
 * `path` when path_addr is 0). */
static void add_image(const fl_reader_t *mem, fl_image_list_t *out, uint64_t header,
                      uint64_t path_addr, const char *path) {
    if (!header || find_header(out, header)) return;
    if (out->count >= FL_IMAGES_MAX) {
        out->truncated = true;
        return;
    }
    fl_image_t *img = &out->image[out->count++];
    fl_memset(img, 0, sizeof *img);
    img->start = img->end = img->text_start = img->text_end = header;

    fl_macho_image_t mi;
    if (parse(mem, header, &mi) == 0) {
        uint64_t end;
        img->slide = mi.slide;
        img->cputype = mi.cputype;
        if (fl_add_u64(header, mi.text_vmsize, &end)) img->end = img->text_end = end;
        if (mi.has_uuid) {
            fl_memcpy(img->build_id, mi.uuid, 16);
            img->build_id_len = 16;
            img->build_id_kind = FL_BUILD_ID_MACHO_UUID;
        }
        if (mi.unwind_info_size && fl_add_u64(mi.unwind_info_vmaddr, mi.slide, &img->unwind_info))
            img->unwind_info_size = mi.unwind_info_size;
        if (mi.eh_frame_size && fl_add_u64(mi.eh_frame_vmaddr, mi.slide, &img->eh_frame))
            img->eh_frame_size = mi.eh_frame_size;
        img->is_main = mi.filetype == MH_EXECUTE;
    }
    if (path_addr) {
        int e = fl_read_cstr(mem, path_addr, img->path, sizeof img->path);
        if (e == FL_ERANGE) img->path_truncated = true;
        else if (e) img->path[0] = 0;
    } else {
        fl_strlcpy(img->path, path, sizeof img->path);
    }
}

/* The timestamp dyld bumps on every change of infoArray (0 before version 15: not known). */
static uint64_t change_stamp(const fl_reader_t *mem, uint32_t version) {
    uint64_t t = 0;
    if (version >= 15 && g_prep.infos_size >= INFOS_V15_SIZE)
        (void)fl_read_u64(mem, g_prep.infos + INFOS_TIMESTAMP, &t);
    return t;
}

static int collect(const fl_reader_t *mem, fl_image_list_t *out) {
    out->count = 0;
    out->truncated = out->inconsistent = false;
    if (!__atomic_load_n(&g_prep.prepared, __ATOMIC_ACQUIRE)) return FL_ESTATE;

    uint32_t head[2]; /* version, infoArrayCount */
    uint64_t array = 0, dyld = 0, dyld_path = 0;
    if (fl_read(mem, g_prep.infos, head, sizeof head) ||
        fl_read_u64(mem, g_prep.infos + INFOS_ARRAY, &array)) {
        out->inconsistent = true;
        add_image(mem, out, g_prep.exe_header, 0, g_prep.exe);
        return FL_EFAULT;
    }
    uint32_t version = head[0];
    if (version >= 2) (void)fl_read_u64(mem, g_prep.infos + INFOS_DYLD_HEADER, &dyld);
    if (version >= 15 && g_prep.infos_size >= INFOS_V15_SIZE)
        (void)fl_read_u64(mem, g_prep.infos + INFOS_DYLD_PATH, &dyld_path);
    uint64_t stamp = change_stamp(mem, version);

    if (!array) {
        /* dyld is changing the list. Retrying is pointless: every other thread, dyld's writer
         * included, is suspended while we capture. */
        out->inconsistent = true;
        add_image(mem, out, g_prep.exe_header, 0, g_prep.exe);
    } else {
        image_info_t chunk[32]; /* a few reads rather than one per entry */
        uint32_t count = head[1];
        if (count > FL_IMAGES_MAX) {
            count = FL_IMAGES_MAX;
            out->truncated = true;
        }
        for (uint32_t i = 0; i < count; i += FL_ARRAY_LEN(chunk)) {
            uint32_t n = count - i < FL_ARRAY_LEN(chunk) ? count - i : (uint32_t)FL_ARRAY_LEN(chunk);
            if (fl_read(mem, array + (uint64_t)i * sizeof chunk[0], chunk, n * sizeof chunk[0])) {
                out->inconsistent = true;
                break;
            }
            for (uint32_t k = 0; k < n; k++)
                add_image(mem, out, chunk[k].load_address, chunk[k].file_path, "");
        }
    }
    /* dyld is not in its own infoArray. */
    if (dyld) add_image(mem, out, dyld, dyld_path, dyld_path ? "" : "/usr/lib/dyld");

    uint64_t array_after = 0;
    if (fl_read_u64(mem, g_prep.infos + INFOS_ARRAY, &array_after) || array_after != array ||
        change_stamp(mem, version) != stamp)
        out->inconsistent = true;
    return 0;
}

int fl_macho_images_collect(const fl_reader_t *mem, fl_image_list_t *out) {
    int e = collect(mem, out);
    fl_images_sort(out);
    return e;
}
