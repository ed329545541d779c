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
        PyErr_SetString(PyExc_ValueError, "stat_many: embedded null character in path");
        return NULL;
    }
    struct stat st;
    int failed = stat(bytes, &st); /* the lock held: see above */
    Py_DECREF(encoded);
    if (failed != 0)
        Py_RETURN_NONE;
    /* os.stat's st_mtime_ns: seconds * 10**9 + nanoseconds */
    long long ns = (long long)MTIME_SEC(st) * 1000000000LL + (long long)MTIME_NSEC(st);
    return Py_BuildValue("(LL)", ns, (long long)st.st_size);
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
