/* Compiled stats: freshness.py's read-your-writes check, the (mtime, size) of a few files and
 * folders before a search, without giving the interpreter lock up. os.stat releases it for
 * each call, and a search made eight of them: each was a moment for another thread waiting
 * for the lock (the watch thread every 50 ms, hit counting's batch) to take it, and the
 * search then waited until that thread gave it back, a wake-up on another core away (issue
 * 38's tail). A stat of a cached file takes about a microsecond: holding the lock for a
 * few of them costs the other threads nothing they would notice. The same values as
 * freshness.py's Python version (py_stat_many), kept for when this module is absent. */

#include "_compiled.h"

#include <string.h>
#include <sys/stat.h>

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

/* (mtime in ns, size) of the file at ``path`` (a str), None when it cannot be stat'ed. */
static PyObject *stat_one(PyObject *path) {
    PyObject *encoded = PyUnicode_EncodeFSDefault(path); /* as os.stat encodes a str */
    if (encoded == NULL)
        return NULL;
    char *bytes;
    Py_ssize_t length;
    if (PyBytes_AsStringAndSize(encoded, &bytes, &length) < 0) {
        Py_DECREF(encoded);
        return NULL;
    }
    if ((size_t)length != strlen(bytes)) {
        Py_DECREF(encoded);
        PyErr_SetString(PyExc_ValueError, "embedded null byte" /* os.stat's words */);
        return NULL;
    }
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
