/* Compiled stats: freshness.py's read-your-writes check, the (mtime, size) of a few files and
 * folders before a search, without giving the interpreter lock up. os.stat releases it for
 * each call, and a search made eight of them: each was a moment for another thread waiting
 * for the lock (the watch thread every 50 ms, hit counting's batch) to take it, and the
 * search then waited until that thread gave it back, a wake-up on another core away (issue
 * 38's tail). A stat of a cached file takes about a microsecond: holding the lock for a
 * few of them costs the other threads nothing they would notice. The same values as
 * freshness.py's Python version (py_stat_many), kept for when this module is absent.
 *
 * Only on a local file system: on NFS, SMB or FUSE (sshfs...) one stat may wait seconds or
 * minutes for a server, and holding the lock would stop every thread of the daemon with it.
 * fs_type (below) tells filesystems.py which file system holds a workspace; elsewhere the
 * stats run off the event loop, through os.stat, which gives the lock up. */

#include "_compiled.h"

#include <string.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/vfs.h>
#elif defined(__APPLE__) || defined(__FreeBSD__)
#include <sys/param.h>
#include <sys/mount.h>
#endif

#if defined(__APPLE__)
#define MTIME_SEC(st) ((st).st_mtimespec.tv_sec)
#define MTIME_NSEC(st) ((st).st_mtimespec.tv_nsec)
#else
#define MTIME_SEC(st) ((st).st_mtim.tv_sec)
#define MTIME_NSEC(st) ((st).st_mtim.tv_nsec)
#endif

/* (sec * 10**9 + nsec, size) in Python ints, as os.stat computes st_mtime_ns. */
static PyObject *wide_ns(long long sec, long long nsec, long long size) {
    PyObject *s = PyLong_FromLongLong(sec), *giga = PyLong_FromLong(1000000000L);
    PyObject *n = PyLong_FromLongLong(nsec), *out = NULL;
    PyObject *s_ns = s && giga && n ? PyNumber_Multiply(s, giga) : NULL;
    PyObject *total = s_ns ? PyNumber_Add(s_ns, n) : NULL;
    if (total != NULL)
        out = Py_BuildValue("(OL)", total, size);
    Py_XDECREF(s);
    Py_XDECREF(giga);
    Py_XDECREF(n);
    Py_XDECREF(s_ns);
    Py_XDECREF(total);
    return out;
}

/* ``path`` (a str) encoded as os.stat encodes it, in a new bytes object whose C string is
 * *bytes; NULL with the error set (os.stat's ValueError for a null character). */
static PyObject *encode_path(PyObject *path, char **bytes) {
    PyObject *encoded = PyUnicode_EncodeFSDefault(path);
    if (encoded == NULL)
        return NULL;
    Py_ssize_t length;
    if (PyBytes_AsStringAndSize(encoded, bytes, &length) < 0) {
        Py_DECREF(encoded);
        return NULL;
    }
    if ((size_t)length != strlen(*bytes)) {
        Py_DECREF(encoded);
        PyErr_SetString(PyExc_ValueError, "embedded null byte" /* os.stat's words */);
        return NULL;
    }
    return encoded;
}

/* (mtime in ns, size) of the file at ``path`` (a str), None when it cannot be stat'ed. */
static PyObject *stat_one(PyObject *path) {
    char *bytes;
    PyObject *encoded = encode_path(path, &bytes);
    if (encoded == NULL)
        return NULL;
    struct stat st;
    int failed = stat(bytes, &st); /* the lock held: see above */
    Py_DECREF(encoded);
    if (failed != 0)
        Py_RETURN_NONE;
    /* os.stat's st_mtime_ns: seconds * 10**9 + nanoseconds, a Python int past 64 bits (a
     * time after 2262 or before 1678, which a file system may hold) */
    long long sec = (long long)MTIME_SEC(st), nsec = (long long)MTIME_NSEC(st), ns;
    if (!__builtin_mul_overflow(sec, 1000000000LL, &ns) && !__builtin_add_overflow(ns, nsec, &ns))
        return Py_BuildValue("(LL)", ns, (long long)st.st_size);
    return wide_ns(sec, nsec, (long long)st.st_size);
}

/* stat_many(paths) -> [(mtime_ns, size) or None]: freshness.py_stat_many. */
PyObject *compiled_stat_many(PyObject *self, PyObject *args) {
    PyObject *paths;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &paths))
        return NULL;
    Py_ssize_t n = PySequence_Size(paths);
    if (n < 0)
        return NULL;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *path = compiled_item(paths, i);
        if (path == NULL)
            goto fail;
        if (!PyUnicode_Check(path)) {
            Py_DECREF(path);
            PyErr_SetString(PyExc_TypeError, "stat_many: paths must be str");
            goto fail;
        }
        PyObject *got = stat_one(path);
        Py_DECREF(path);
        if (got == NULL)
            goto fail;
        PyList_SetItem(out, i, got); /* steals the reference */
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* fs_type(path) -> the type of the file system that holds ``path`` (a str; links followed):
 * statfs's f_type on Linux (an int: 0xEF53 for ext4, 0x6969 for NFS...), its f_fstypename on
 * macOS and FreeBSD (a str: "apfs", "smbfs"...), None when statfs fails or elsewhere.
 * filesystems.py names and classifies it. statfs asks the file system itself: on a hung
 * network mount it waits as long as a stat would, so here the lock is given up (the only
 * call of this module that does) and the callers run it off the event loop. */
PyObject *compiled_fs_type(PyObject *self, PyObject *args) {
    PyObject *path;
    (void)self;
    if (!PyArg_ParseTuple(args, "U", &path))
        return NULL;
    char *bytes;
    PyObject *encoded = encode_path(path, &bytes);
    if (encoded == NULL)
        return NULL;
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__)
    struct statfs sf;
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = statfs(bytes, &sf);
    Py_END_ALLOW_THREADS
    Py_DECREF(encoded);
    if (failed != 0)
        Py_RETURN_NONE;
#if defined(__linux__)
    /* magic numbers are 32 bits; f_type is a signed long on some platforms */
    return PyLong_FromUnsignedLong((unsigned long)sf.f_type & 0xFFFFFFFFUL);
#else
    return PyUnicode_DecodeFSDefaultAndSize(
        sf.f_fstypename, (Py_ssize_t)strnlen(sf.f_fstypename, sizeof sf.f_fstypename));
#endif
#else
    Py_DECREF(encoded);
    Py_RETURN_NONE;
#endif
}
