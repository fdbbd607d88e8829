/* SPDX-License-Identifier: MIT */
/* elf: the loaded-image list, from auxv (recorded at install) and the loader's r_debug list. */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "elf/elf.h"

#pragma GCC poison malloc calloc realloc free printf fprintf snprintf

/* Written once by fl_elf_images_prepare at install time, only read afterwards. */
static struct {
    bool prepared;
    uint64_t phdr, phnum;   /* AT_PHDR, AT_PHNUM */
    uint64_t exe_slide;     /* the executable's load bias */
    uint64_t vdso;          /* AT_SYSINFO_EHDR, 0 if none */
    uint64_t r_debug;       /* the loader's live r_debug */
    uint64_t execfn;        /* AT_EXECFN: the name the program was started by (no /proc) */
    /* The executable's .eh_frame when it has no PT_GNU_EH_FRAME (a -static link): its CFI is
     * then found by a scan of the records, which must be located from the section headers. */
    uint64_t exe_eh_frame, exe_eh_frame_size;
} g_prep FL_STARTUP_DATA;

/* Reads an ELF header at addr and checks what the program-header walk relies on. */
static bool read_ehdr(const fl_reader_t *mem, uint64_t addr, Elf64_Ehdr *eh) {
    if (fl_read(mem, addr, eh, sizeof *eh)) return false;
    return fl_memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
           eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum > 0 && eh->e_phnum <= FL_PHNUM_MAX;
}

/* The first program header of the given type (for PT_LOAD: the one with the lowest index). */
static bool find_phdr(const fl_reader_t *mem, uint64_t phdr, uint64_t phnum, uint32_t type,
                      Elf64_Phdr *out) {
    if (phnum > FL_PHNUM_MAX) return false;
    Elf64_Phdr chunk[16]; /* a few reads, not one per header: each safe read is a system call */
    for (uint64_t i = 0; i < phnum; i += FL_ARRAY_LEN(chunk)) {
        uint64_t n = phnum - i < FL_ARRAY_LEN(chunk) ? phnum - i : FL_ARRAY_LEN(chunk);
        if (fl_read(mem, phdr + i * sizeof *out, chunk, n * sizeof *out)) return false;
        for (uint64_t k = 0; k < n; k++) {
            if (chunk[k].p_type == type) {
                *out = chunk[k];
                return true;
            }
        }
    }
    return false;
}

/* The executable's load bias. PT_PHDR gives it directly. Without one (some static programs),
 * the ELF header conventionally sits right before the program headers at the start of the
 * PT_LOAD with file offset 0; accept that only if the header there confirms it. Else 0. */
static uint64_t exe_slide(const fl_reader_t *mem) {
    Elf64_Phdr p;
    if (find_phdr(mem, g_prep.phdr, g_prep.phnum, PT_PHDR, &p)) return g_prep.phdr - p.p_vaddr;
    Elf64_Ehdr eh;
    uint64_t ehdr = g_prep.phdr - sizeof eh;
    if (g_prep.phdr < sizeof eh || !read_ehdr(mem, ehdr, &eh) || eh.e_phoff != sizeof eh)
        return 0;
    for (uint64_t i = 0; i < g_prep.phnum && i < FL_PHNUM_MAX; i++) {
        if (fl_read(mem, g_prep.phdr + i * sizeof p, &p, sizeof p)) return 0;
        if (p.p_type == PT_LOAD && p.p_offset == 0) return ehdr - p.p_vaddr;
    }
    return 0;
}

/* The loader's r_debug. ld.so stores its address in the executable's DT_DEBUG entry, which is
 * right even when the executable holds a copy-relocated _r_debug (any non-PIC reference to it
 * makes one, and then &_r_debug names that copy, whose r_state never changes again).
 * Static programs have no DT_DEBUG: there, &_r_debug is libc.a's own and is right. */
static uint64_t find_r_debug(const fl_reader_t *mem) {
    Elf64_Phdr dyn;
    if (find_phdr(mem, g_prep.phdr, g_prep.phnum, PT_DYNAMIC, &dyn)) {
        uint64_t at = dyn.p_vaddr + g_prep.exe_slide;
        uint64_t count = dyn.p_memsz / sizeof(Elf64_Dyn);
        Elf64_Dyn chunk[16];
        /* The loader has read this dynamic section itself (DT_NEEDED, relocations), so it is
         * mapped: read it directly (each safe read is a system call of ~1 µs). */
        fl_reader_t direct;
        fl_reader_init_range(&direct, at, at + (count < 4096 ? count : 4096) * sizeof(Elf64_Dyn), mem);
        mem = &direct;
        for (uint64_t i = 0; i < count && i < 4096; i += FL_ARRAY_LEN(chunk)) {
            uint64_t n = count - i < FL_ARRAY_LEN(chunk) ? count - i : FL_ARRAY_LEN(chunk);
            if (fl_read(mem, at + i * sizeof(Elf64_Dyn), chunk, n * sizeof(Elf64_Dyn))) break;
            for (uint64_t k = 0; k < n; k++) {
                if (chunk[k].d_tag == DT_NULL) goto done;
                if (chunk[k].d_tag == DT_DEBUG && chunk[k].d_un.d_ptr) return chunk[k].d_un.d_ptr;
            }
        }
    done:;
    }
    return (uint64_t)(uintptr_t)&_r_debug;
}

int fl_elf_images_prepare(void) {
    /* Reads beyond what the loader itself has read go through the safe reader: the fallbacks
     * look at addresses that are only conventionally mapped. */
    if (fl_memory_method() == FL_MEMORY_NONE) {
        int e = fl_memory_init(FL_MEMORY_NONE);
        if (e) return e;
    }
    g_prep.phdr = getauxval(AT_PHDR);
    g_prep.phnum = getauxval(AT_PHNUM);
    /* The program headers at AT_PHDR are mapped (the loader read them before main) and are read
     * directly; the rest through the safe reader. */
    fl_reader_t mem_phdrs;
    fl_reader_init_range(&mem_phdrs, g_prep.phdr,
                         g_prep.phdr + (g_prep.phnum <= FL_PHNUM_MAX ? g_prep.phnum : 0) *
                                           sizeof(Elf64_Phdr),
                         fl_memory_reader());
    const fl_reader_t *mem = &mem_phdrs;
    g_prep.vdso = getauxval(AT_SYSINFO_EHDR);
    g_prep.execfn = getauxval(AT_EXECFN);
    g_prep.exe_slide = g_prep.phdr ? exe_slide(mem) : 0;
    g_prep.r_debug = find_r_debug(mem);
    Elf64_Phdr ehf;
    g_prep.exe_eh_frame = g_prep.exe_eh_frame_size = 0;
    fl_elf_file_t *f;
    if (g_prep.phdr && !find_phdr(mem, g_prep.phdr, g_prep.phnum, PT_GNU_EH_FRAME, &ehf) &&
        fl_elf_file_open("/proc/self/exe", &f) == 0) {
        uint64_t addr, size;
        if (fl_elf_file_section(f, ".eh_frame", &addr, &size) == 0) {
            g_prep.exe_eh_frame = addr + g_prep.exe_slide;
            g_prep.exe_eh_frame_size = size;
        }
        fl_elf_file_close(f);
    }
    __atomic_store_n(&g_prep.prepared, true, __ATOMIC_RELEASE);
    return g_prep.phdr ? 0 : FL_ENOTFOUND;
}

bool fl_elf_exe_path(char *buf, size_t len) {
    static const char deleted[] = " (deleted)";
    const size_t dn = sizeof deleted - 1;
    if (!len) return false;
    /* (as fl_maps_read: once the main thread has exited, /proc/self/exe is gone) */
    long n = fl_sys_readlinkat(AT_FDCWD, "/proc/self/exe", buf, len);
    if (n < 0) n = fl_sys_readlinkat(AT_FDCWD, "/proc/thread-self/exe", buf, len);
    /* No /proc (a chroot or container without it): the name the program was started by, as
     * execve got it (relative to the directory it was started in, if it was). */
    if (n < 0 && g_prep.execfn) {
        int e = fl_read_cstr(fl_memory_reader(), g_prep.execfn, buf, len);
        if (e == 0 || e == FL_ERANGE) n = e ? (long)len : (long)fl_strnlen(buf, len);
    }
    if (n < 0) n = 0;
    bool whole = (size_t)n < len;
    if (!whole) n = (long)len - 1;
    buf[n] = 0;
    if (whole && (size_t)n > dn && fl_memcmp(buf + n - dn, deleted, dn) == 0) buf[n - dn] = 0;
    return whole;
}

static fl_image_t *new_image(fl_image_list_t *out) {
    if (out->count >= FL_IMAGES_MAX) {
        out->truncated = true;
        return 0;
    }
    fl_image_t *img = &out->image[out->count];
    fl_memset(img, 0, sizeof *img);
    return img;
}

/* An image without a GNU build-id is identified as Breakpad and Sentry identify its file: by the
 * first bytes of its .text section, found in the file's section table (read with pread: the
 * table is not mapped) and hashed from memory. It keeps the segment hash when its file cannot be
 * read or has no .text. */
static void text_section_id(const fl_reader_t *mem, fl_image_t *img) {
    if (img->build_id_kind == FL_BUILD_ID_GNU || !img->path[0] || img->path_truncated) return;
    int fd = (int)fl_sys_openat(AT_FDCWD, img->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0) return;
    fl_reader_t file;
    fl_reader_init_fd(&file, fd);
    uint64_t addr, off, size;
    uint8_t id[16];
    if (fl_elf_text_section(&file, &addr, &off, &size) == 0 &&
        fl_elf_text_hash(mem, addr + img->slide, size, id) == 0) {
        fl_memcpy(img->build_id, id, sizeof id);
        img->build_id_len = sizeof id;
        img->build_id_kind = FL_BUILD_ID_TEXT_SECTION;
    }
    fl_sys_close(fd);
}

/* The entry kept from an earlier collect at the place the next image goes, if its key is `key`
 * (and its path `path`, when given); it is then counted. */
static const fl_image_t *reuse(fl_image_list_t *out, unsigned old_count, uint64_t key,
                               const char *path) {
    if (!key || out->count >= old_count || out->count >= FL_IMAGES_MAX) return 0;
    fl_image_t *img = &out->image[out->count];
    if (img->loader_key != key || (path && fl_strcmp(img->path, path) != 0)) return 0;
    out->count++;
    return img;
}

/* A key that is never 0 (splitmix64's finaliser over the three words). */
static uint64_t key_of(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ b;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull ^ c;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h ? h : 1;
}

static void add_main(const fl_reader_t *mem, fl_image_list_t *out, unsigned old_count) {
    uint64_t key = key_of(1, g_prep.phdr, g_prep.exe_slide);
    if (reuse(out, old_count, key, 0)) return;
    fl_image_t *img = new_image(out);
    if (!img) return;
    if (g_prep.phdr)
        (void)fl_elf_image_from_phdrs(mem, g_prep.phdr, (unsigned)g_prep.phnum, g_prep.exe_slide,
                                      img);
    img->slide = g_prep.exe_slide;
    if (!img->eh_frame_hdr) {
        img->eh_frame = g_prep.exe_eh_frame;
        img->eh_frame_size = g_prep.exe_eh_frame_size;
    }
    img->is_main = true;
    img->loader_key = key;
    img->path_truncated = !fl_elf_exe_path(img->path, sizeof img->path);
    text_section_id(mem, img);
    out->count++;
}

/* The vdso has no file: its ELF header is mapped at AT_SYSINFO_EHDR, i.e. file offset 0 of its
 * first PT_LOAD, which gives the bias. */
static const fl_image_t *add_vdso(const fl_reader_t *mem, fl_image_list_t *out,
                                  unsigned old_count) {
    uint64_t key = key_of(2, g_prep.vdso, 0);
    const fl_image_t *kept = g_prep.vdso ? reuse(out, old_count, key, 0) : 0;
    if (kept) return kept;
    Elf64_Ehdr eh;
    Elf64_Phdr load;
    uint64_t phdr;
    if (!g_prep.vdso || !read_ehdr(mem, g_prep.vdso, &eh) ||
        !fl_add_u64(g_prep.vdso, eh.e_phoff, &phdr) ||
        !find_phdr(mem, phdr, eh.e_phnum, PT_LOAD, &load))
        return 0;
    fl_image_t *img = new_image(out);
    if (!img) return 0;
    uint64_t slide = g_prep.vdso - (load.p_vaddr - load.p_offset);
    if (fl_elf_image_from_phdrs(mem, phdr, eh.e_phnum, slide, img)) return 0;
    img->is_vdso = true;
    img->loader_key = key;
    fl_strlcpy(img->path, "[vdso]", sizeof img->path);
    return &out->image[out->count++];
}

/* Appends one link_map entry. Its ELF header is assumed at l_addr, which holds for every object
 * whose first PT_LOAD has p_vaddr 0 (all normal shared objects); otherwise (prelinked objects)
 * the image keeps only its path and bias. */
static void add_link_map(const fl_reader_t *mem, fl_image_list_t *out, const struct link_map *lm,
                         const char *name, bool truncated, uint64_t node, unsigned old_count) {
    uint64_t key = key_of(node, (uint64_t)lm->l_addr, (uint64_t)(uintptr_t)lm->l_ld);
    if (reuse(out, old_count, key, name)) return;
    fl_image_t *img = new_image(out);
    if (!img) return;
    uint64_t base = (uint64_t)lm->l_addr, phdr;
    Elf64_Ehdr eh;
    if (!read_ehdr(mem, base, &eh) || !fl_add_u64(base, eh.e_phoff, &phdr) ||
        fl_elf_image_from_phdrs(mem, phdr, eh.e_phnum, base, img) != 0) {
        fl_memset(img, 0, sizeof *img);
        img->slide = base;
    }
    fl_strlcpy(img->path, name, sizeof img->path);
    img->path_truncated = truncated;
    img->loader_key = key;
    text_section_id(mem, img);
    out->count++;
}

static bool r_consistent(const fl_reader_t *mem) {
    struct r_debug rd;
    return fl_read(mem, g_prep.r_debug, &rd, sizeof rd) == 0 && rd.r_state == RT_CONSISTENT;
}

/* old_count: entries of an earlier collect into out that may be kept (0: none). */
static int collect(const fl_reader_t *mem, fl_image_list_t *out, unsigned old_count) {
    out->count = 0;
    out->truncated = out->inconsistent = false;
    if (!__atomic_load_n(&g_prep.prepared, __ATOMIC_ACQUIRE)) return FL_ESTATE;

    add_main(mem, out, old_count);
    const fl_image_t *vdso = add_vdso(mem, out, old_count);

    struct r_debug rd;
    if (!g_prep.r_debug || fl_read(mem, g_prep.r_debug, &rd, sizeof rd)) {
        out->inconsistent = true;
        return 0;
    }
    if (rd.r_state != RT_CONSISTENT) out->inconsistent = true;

    /* Walked without the loader's lock, so the list may be mid-update or corrupt. Each entry's
     * l_prev must name the entry we came from: that rejects cycles and torn inserts, and with
     * the iteration cap keeps the walk finite. */
    uint64_t node = (uint64_t)(uintptr_t)rd.r_map, prev = 0;
    char name[FL_IMAGE_PATH_MAX];
    for (unsigned iter = 0; node; iter++) {
        if (iter >= FL_IMAGES_MAX + 2 || out->count >= FL_IMAGES_MAX) { /* +2: main, vdso */
            out->truncated = true;
            break;
        }
        struct link_map lm; /* the public prefix of glibc's link_map, which is ABI */
        if (fl_read(mem, node, &lm, sizeof lm) || (uint64_t)(uintptr_t)lm.l_prev != prev) {
            out->inconsistent = true;
            break;
        }
        prev = node;
        node = (uint64_t)(uintptr_t)lm.l_next;

        int e = lm.l_name ? fl_read_cstr(mem, (uint64_t)(uintptr_t)lm.l_name, name, sizeof name)
                          : FL_EFAULT;
        if (e != 0 && e != FL_ERANGE) name[0] = 0;
        /* The main program is the (nameless) first entry and is already listed. */
        if (iter == 0 && name[0] == 0) continue;
        /* The loader lists the vdso too (as linux-vdso.so.1); its dynamic section lies inside
         * the vdso image we already have. */
        uint64_t ld = (uint64_t)(uintptr_t)lm.l_ld;
        if (vdso && ld >= vdso->start && ld < vdso->end) continue;
        add_link_map(mem, out, &lm, name, e == FL_ERANGE, prev, old_count);
    }
    if (!r_consistent(mem)) out->inconsistent = true; /* changed while we walked */
    return 0;
}

int fl_elf_images_collect(const fl_reader_t *mem, fl_image_list_t *out) {
    int e = collect(mem, out, 0);
    fl_images_sort(out);
    return e;
}

int fl_elf_images_refresh(const fl_reader_t *mem, fl_image_list_t *out) {
    unsigned old = out->count <= FL_IMAGES_MAX ? out->count : 0;
    int e = collect(mem, out, old);
    fl_images_sort(out);
    return e;
}
