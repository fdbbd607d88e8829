/* SPDX-License-Identifier: MIT */
/* fl_strerror: one static message per FL_E* code. */
#include <errno.h>

#include "base/base.h"

const char *fl_strerror(int err) {
    switch (err) {
    case FL_OK: return "success";
    case FL_EINVAL: return "invalid argument";
    case FL_ENOMEM: return "out of memory";
    case FL_EFAULT: return "memory could not be read";
    case FL_EBADDATA: return "malformed data";
    case FL_ENOTFOUND: return "not found";
    case FL_ERANGE: return "a limit was reached";
    case FL_EIO: return "input/output error";
    case FL_EBUSY: return "already installed or busy";
    case FL_ENOSYS: return "not supported on this platform";
    case FL_ETRUNCATED: return "report is truncated";
    case FL_ENOTREPORT: return "not a faultline report";
    case FL_EVERSION: return "report format version is newer than this reader";
    case FL_ESTATE: return "faultline is not installed";
    case FL_ENOTFILE: return "not a regular file";
    case FL_EBLOCKED: return "the thread blocks faultline's capture signal";
    case FL_ENOTHREAD: return "no such thread in this process";
    case FL_ETIMEDOUT: return "the thread did not answer in time";
    case FL_ENOSIGNAL: return "no capture signal (none was free, or the application took it)";
    default: return "unknown error";
    }
}

const char *fl_errno_text(int e) {
    switch (e) {
    case EACCES: return "permission denied (EACCES)";
    case EPERM: return "operation not permitted (EPERM)";
    case ENOENT: return "no such file or directory (ENOENT)";
    case ENOTDIR: return "not a directory (ENOTDIR)";
    case ENOSPC: return "no space left on device (ENOSPC)";
    case EDQUOT: return "disk quota exceeded (EDQUOT)";
    case EROFS: return "read-only file system (EROFS)";
    case EMFILE: return "too many open files (EMFILE)";
    case ENFILE: return "too many open files in the system (ENFILE)";
    case EFBIG: return "file too large (EFBIG)";
    case EIO: return "input/output error (EIO)";
    case ENAMETOOLONG: return "file name too long (ENAMETOOLONG)";
    default: return NULL;
    }
}
