/* SPDX-License-Identifier: MIT */
/* demangle: Swift and Rust symbol names for people (the CLI only; never on the crash path). */
#ifndef FAULTLINE_DEMANGLE_H
#define FAULTLINE_DEMANGLE_H

#include <stddef.h>

/* Flags of the demanglers below. */
enum {
    FL_DEMANGLE_FULL = 0,      /* the form the scheme's own tool prints by default
                                * (swift-demangle; c++filt for Rust) */
    FL_DEMANGLE_SIMPLIFIED = 1 /* the short form for text views and signatures (swift-demangle
                                * --simplified; Rust without the legacy hash) */
};

/* Each demangler writes the readable form of `sym` into out[0..cap) (NUL-terminated, cut at
 * cap - 1 bytes, never more) and returns its length, or FL_ENOTFOUND when sym is not a name of
 * its scheme (or does not decode: the caller shows it raw), FL_EINVAL for cap == 0. Time and
 * memory are bounded whatever the input (no allocation; recursion and output are capped).
 * NOT AS-SAFE (the CLI only), but thread-safe. */
int fl_demangle_swift(const char *sym, char *out, size_t cap, unsigned flags);
int fl_demangle_rust(const char *sym, char *out, size_t cap, unsigned flags);

#endif
