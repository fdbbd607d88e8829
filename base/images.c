/* SPDX-License-Identifier: MIT */
/* Lookups in the platform-neutral image list. */
#include "base/base.h"

static unsigned count_of(const fl_image_list_t *list) {
    return list->count < FL_IMAGES_MAX ? list->count : FL_IMAGES_MAX;
}

static bool before(const fl_image_list_t *l, unsigned a, unsigned b) {
    return l->image[a].start < l->image[b].start;
}

static void sift(fl_image_list_t *l, unsigned root, unsigned n) {
    uint16_t *v = l->by_start;
    for (unsigned child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && before(l, v[child], v[child + 1])) child++;
        if (!before(l, v[root], v[child])) return;
        uint16_t t = v[root];
        v[root] = v[child];
        v[child] = t;
    }
}

uint64_t fl_image_identity(const fl_image_t *img) {
    uint64_t id[FL_BUILD_ID_MAX / 8];
    fl_memcpy(id, img->build_id, sizeof id);
    const uint64_t v[] = {img->start, img->end,   img->slide,   img->eh_frame_hdr,
                          img->eh_frame, img->eh_frame_size, img->build_id_len,
                          id[0], id[1], id[2], id[3]};
    _Static_assert(FL_BUILD_ID_MAX == 32, "identity hashes the build id as 4 words");
    uint64_t h = 0;
    for (unsigned i = 0; i < FL_ARRAY_LEN(v); i++) h = (h ^ v[i]) * 0x9e3779b97f4a7c15ull + i;
    return h | 1;
}

void fl_images_sort(fl_image_list_t *list) {
    unsigned n = count_of(list);
    for (unsigned i = 0; i < n; i++) list->image[i].id = fl_image_identity(&list->image[i]);
    uint16_t *v = list->by_start;
    for (unsigned i = 0; i < n; i++) v[i] = (uint16_t)i;
    for (unsigned i = n / 2; i-- > 0;) sift(list, i, n);
    for (unsigned end = n; end > 1; end--) {
        uint16_t t = v[0];
        v[0] = v[end - 1];
        v[end - 1] = t;
        sift(list, 0, end - 1);
    }
    list->sorted = list->count;
}

const fl_image_t *fl_images_find(const fl_image_list_t *list, uint64_t addr) {
    unsigned n = count_of(list);
    if (list->sorted == list->count && n) {
        /* The last image starting at or below addr (images do not overlap). */
        unsigned lo = 0, hi = n;
        while (hi - lo > 1) {
            unsigned mid = lo + (hi - lo) / 2;
            if (list->image[list->by_start[mid]].start <= addr) lo = mid;
            else hi = mid;
        }
        const fl_image_t *img = &list->image[list->by_start[lo]];
        return addr >= img->start && addr < img->end ? img : 0;
    }
    for (unsigned i = 0; i < n; i++) {
        const fl_image_t *img = &list->image[i];
        if (addr >= img->start && addr < img->end) return img;
    }
    return 0;
}

bool fl_images_is_text(const fl_image_list_t *list, uint64_t addr) {
    if (list->sorted == list->count && list->count) {
        const fl_image_t *img = fl_images_find(list, addr);
        return img && addr >= img->text_start && addr < img->text_end;
    }
    unsigned n = count_of(list);
    for (unsigned i = 0; i < n; i++) {
        const fl_image_t *img = &list->image[i];
        if (addr >= img->text_start && addr < img->text_end) return true;
    }
    return false;
}
