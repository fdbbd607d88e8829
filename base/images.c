/* SPDX-License-Identifier: MIT */
/* Lookups in the platform-neutral image list. */
#include "base/base.h"

const fl_image_t *fl_images_find(const fl_image_list_t *list, uint64_t addr) {
    unsigned n = list->count < FL_IMAGES_MAX ? list->count : FL_IMAGES_MAX;
    for (unsigned i = 0; i < n; i++) {
        const fl_image_t *img = &list->image[i];
        if (addr >= img->start && addr < img->end) return img;
    }
    return 0;
}

bool fl_images_is_text(const fl_image_list_t *list, uint64_t addr) {
    unsigned n = list->count < FL_IMAGES_MAX ? list->count : FL_IMAGES_MAX;
    for (unsigned i = 0; i < n; i++) {
        const fl_image_t *img = &list->image[i];
        if (addr >= img->text_start && addr < img->text_end) return true;
    }
    return false;
}
