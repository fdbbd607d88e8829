/* SPDX-License-Identifier: MIT */
/* macho: walking dyld's all-image-infos through a memory reader (portable; tested on Linux). */
#ifndef FAULTLINE_MACHO_DYLD_IMAGES_H
#define FAULTLINE_MACHO_DYLD_IMAGES_H

#include "base/mach_layouts.h"
#include "macho/macho.h"

/* What the collector needs to know in advance (Darwin: recorded at install time). */
typedef struct fl_macho_dyld {
    uint64_t infos;      /* address of dyld_all_image_infos (task_info TASK_DYLD_INFO) */
    uint64_t infos_size; /* its size as the kernel gives it: fields beyond it are not read */
    uint64_t exe_header; /* the main executable's mach_header_64 */
    const char *exe;     /* its path */
} fl_macho_dyld_t;

/* Collects every loaded image from the all-image-infos at d->infos through `mem` (the layouts of
 * base/mach_layouts.h), without dyld's lock: version, infoArrayCount and infoArray; from version 2
 * dyldImageLoadAddress; from version 15 (and infos_size covering them) infoArrayChangeTimestamp
 * and dyldPath. Each infoArray entry (read in chunks of 32), then dyld itself (named by dyldPath,
 * else "/usr/lib/dyld"), is parsed with fl_macho_image_init (loaded) and described with
 * fl_macho_image_describe_parsed; an image whose header does not parse keeps its path and header
 * address (start = end = header); duplicates (by header) are listed once. Unreadable infos:
 * FL_EFAULT, the executable alone, out->inconsistent. A NULL infoArray (dyld is changing it):
 * the executable and dyld, out->inconsistent. A count above FL_IMAGES_MAX: out->truncated. An
 * entry that cannot be read, or an array pointer or timestamp that changed during the walk:
 * out->inconsistent. Each image's tables_lo/hi are its __TEXT (the walker reads the unwind
 * tables in place; 0, 0 while the list is inconsistent). The list is sorted (fl_images_sort).
 * AS-SAFE. */
int fl_macho_dyld_collect(const fl_reader_t *mem, const fl_macho_dyld_t *d, fl_image_list_t *out);

#endif
