/* SPDX-License-Identifier: MIT */
/* Lookups in a parsed memory map (maps_linux.c fills it from /proc/self/maps). */
#include "base/base.h"

const fl_map_t *fl_maps_find(const fl_maps_t *m, uint64_t addr) {
    unsigned lo = 0, hi = m->count;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        const fl_map_t *e = &m->map[mid];
        if (addr < e->start) hi = mid;
        else if (addr >= e->end) lo = mid + 1;
        else return e;
    }
    return NULL;
}

const fl_map_t *fl_maps_stack(const fl_maps_t *m, uint64_t sp) {
    /* The first mapping starting above sp (the maps are sorted by address); the one before it
     * holds sp, if any does. */
    unsigned lo = 0, hi = m->count;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (m->map[mid].start > sp) hi = mid;
        else lo = mid + 1;
    }
    const fl_map_t *s = lo ? &m->map[lo - 1] : 0;
    if (s && sp < s->end && (s->perms & FL_MAP_W)) return s;
    if (lo >= m->count) return 0;
    s = &m->map[lo];
    return (s->perms & FL_MAP_W) && s->start - sp <= 65536 ? s : 0;
}

const char *fl_maps_name(const fl_maps_t *m, const fl_map_t *map) {
    return map->name_off == UINT32_MAX ? "" : m->names + map->name_off;
}

void fl_images_map_tables(fl_image_list_t *list, const fl_maps_t *maps) {
    unsigned n = list->count < FL_IMAGES_MAX ? list->count : FL_IMAGES_MAX;
    for (unsigned i = 0; i < n; i++) {
        fl_image_t *img = &list->image[i];
        uint64_t anchor = img->eh_frame_hdr ? img->eh_frame_hdr : img->eh_frame;
        const fl_map_t *m = anchor ? fl_maps_find(maps, anchor) : 0;
        img->tables_lo = img->tables_hi = 0;
        if (!m || !(m->perms & FL_MAP_R)) continue;
        /* .eh_frame_hdr and .eh_frame share a read-only segment, which the map may show as
         * several lines: join the readable neighbours (a few: tables are not that large). */
        unsigned first = (unsigned)(m - maps->map), last = first;
        for (unsigned k = 0; k < 8 && first > 0; k++, first--) {
            const fl_map_t *p = &maps->map[first - 1];
            if (p->end != maps->map[first].start || !(p->perms & FL_MAP_R)) break;
        }
        for (unsigned k = 0; k < 8 && last + 1 < maps->count; k++, last++) {
            const fl_map_t *q = &maps->map[last + 1];
            if (q->start != maps->map[last].end || !(q->perms & FL_MAP_R)) break;
        }
        img->tables_lo = maps->map[first].start;
        img->tables_hi = maps->map[last].end;
    }
}
