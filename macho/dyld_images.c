/* SPDX-License-Identifier: MIT */
/* macho: the loaded-image list from dyld's all-image-infos, read through a memory reader. */
#include "macho/dyld_images.h"

#pragma GCC poison malloc calloc realloc free

_Static_assert(sizeof(fl_dyld_image_info_t) == 24, "dyld_image_info on LP64");

/* Load commands of one image are copied with one read into this buffer and parsed from there
 * (a safe read is a Mach call on Darwin: ~50 of them per image otherwise). Claimed with an atomic
 * flag; a concurrent collector, which the crash module never starts, parses through `mem`. */
static uint8_t g_cmds[16384];
static volatile int g_cmds_busy;

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
    fl_macho_image_t mi;
    if (parse(mem, header, &mi) == 0) fl_macho_image_describe_parsed(&mi, img);
    else {
        fl_memset(img, 0, sizeof *img);
        img->start = img->end = img->text_start = img->text_end = header;
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
static uint64_t change_stamp(const fl_reader_t *mem, const fl_macho_dyld_t *d, uint32_t version) {
    uint64_t t = 0;
    if (version >= 15 && d->infos_size >= FL_DYLD_INFOS_V15_SIZE)
        (void)fl_read_u64(mem, d->infos + FL_DYLD_INFOS_TIMESTAMP, &t);
    return t;
}

static int collect(const fl_reader_t *mem, const fl_macho_dyld_t *d, fl_image_list_t *out) {
    out->count = 0;
    out->truncated = out->inconsistent = false;
    uint32_t version, count;
    uint64_t array = 0, dyld = 0, dyld_path = 0;
    if (fl_read_u32(mem, d->infos + FL_DYLD_INFOS_VERSION, &version) ||
        fl_read_u32(mem, d->infos + FL_DYLD_INFOS_COUNT, &count) ||
        fl_read_u64(mem, d->infos + FL_DYLD_INFOS_ARRAY, &array)) {
        out->inconsistent = true;
        add_image(mem, out, d->exe_header, 0, d->exe);
        return FL_EFAULT;
    }
    if (version >= 2) (void)fl_read_u64(mem, d->infos + FL_DYLD_INFOS_DYLD_HEADER, &dyld);
    if (version >= 15 && d->infos_size >= FL_DYLD_INFOS_V15_SIZE)
        (void)fl_read_u64(mem, d->infos + FL_DYLD_INFOS_DYLD_PATH, &dyld_path);
    uint64_t stamp = change_stamp(mem, d, version);

    if (!array) {
        /* dyld is changing the list. Retrying is pointless in a capture: every other thread,
         * dyld's writer included, is suspended. */
        out->inconsistent = true;
        add_image(mem, out, d->exe_header, 0, d->exe);
    } else {
        fl_dyld_image_info_t chunk[32]; /* a few reads rather than one per entry */
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
    if (fl_read_u64(mem, d->infos + FL_DYLD_INFOS_ARRAY, &array_after) || array_after != array ||
        change_stamp(mem, d, version) != stamp)
        out->inconsistent = true;
    return 0;
}

int fl_macho_dyld_collect(const fl_reader_t *mem, const fl_macho_dyld_t *d, fl_image_list_t *out) {
    int e = collect(mem, d, out);
    /* The unwind tables lie in __TEXT, which an image keeps mapped readable while dyld lists it
     * (dyld unmaps an image after taking it off the list, and every thread but the capturing
     * one is suspended): the walker reads them in place, not one vm_read_overwrite per read.
     * Not while dyld is changing the list. */
    for (unsigned i = 0; i < out->count; i++) {
        fl_image_t *img = &out->image[i];
        bool whole = !out->inconsistent && img->end > img->start;
        img->tables_lo = whole ? img->start : 0;
        img->tables_hi = whole ? img->text_end : 0;
    }
    fl_images_sort(out);
    return e;
}
