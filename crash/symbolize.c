/* SPDX-License-Identifier: MIT */
/* fl_symbolize_local: an address of this process to its image and nearest symbol, on the device. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crash/crash.h"

/* The image list is read at each call (libraries come and go) into buffers made at the first
 * call and kept; the lock covers them only, not the file work. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static fl_image_list_t *g_images;
static fl_maps_t *g_maps;
static char *g_scratch;
#define SCRATCH_LEN (64u * 1024u)

static int find_image(uint64_t pc, fl_image_t *out) {
    pthread_mutex_lock(&g_lock);
    int e = 0;
    if (!g_images) {
        g_images = calloc(1, sizeof *g_images);
        g_maps = calloc(1, sizeof *g_maps);
        g_scratch = malloc(SCRATCH_LEN);
        if (!g_images || !g_maps || !g_scratch) {
            free(g_images);
            free(g_maps);
            free(g_scratch);
            g_images = NULL;
            g_maps = NULL;
            g_scratch = NULL;
            e = FL_ENOMEM;
        }
    }
    if (!e) {
        int maps_err = 0, img_err = 0;
        fl_crash_os_images(g_images, g_maps, g_scratch, SCRATCH_LEN, true, &maps_err, &img_err);
        const fl_image_t *img = fl_images_find(g_images, pc);
        if (img) *out = *img;
        else e = img_err && !g_images->count ? img_err : FL_ENOTFOUND;
    }
    pthread_mutex_unlock(&g_lock);
    return e;
}

int fl_symbolize_local(uintptr_t pc, fl_symbol_info *info) {
    if (!info) return FL_EINVAL;
    memset(info, 0, sizeof *info);
    if (fl_crash_config.dirfd < 0) return FL_ESTATE;
    fl_image_t *img = malloc(sizeof *img);
    if (!img) return FL_ENOMEM;
    int e = find_image(pc, img);
    if (!e) {
        fl_strlcpy(info->image_path, img->is_vdso ? "" : img->path, sizeof info->image_path);
        info->image_base = (uintptr_t)img->start;
        info->image_slide = (uintptr_t)img->slide;
        uint64_t sym = 0;
        e = fl_crash_os_image_symbol(img, pc, info->symbol, sizeof info->symbol, &sym,
                                     &info->source);
        if (e == FL_ENOTFOUND) {
            info->symbol[0] = 0;
            info->source = FL_SYMBOL_NONE;
            e = 0;
        } else if (e == 0) {
            info->symbol_addr = (uintptr_t)sym;
            info->offset = (uintptr_t)(pc - sym);
        }
    }
    free(img);
    return e;
}
