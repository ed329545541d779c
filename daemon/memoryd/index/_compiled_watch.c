/* Compiled file events (Linux): what freshness.py's quiet check (file_events.py) asks of
 * inotify and of the mount table, without ctypes (its import is milliseconds of a daemon's
 * start) and with the interpreter lock held: none of these calls waits (the fd is
 * non-blocking, a poll has no timeout, a watch is added only where the stats would go,
 * which is a local file system).
 *
 * The kernel queues an inotify event inside the call that changes the file (write,
 * truncate, rename, link, unlink, utimes...), before that call returns to the writer: when
 * the queue is empty, nothing was changed through those calls since the watches were set.
 * Elsewhere (macOS, FreeBSD) every function raises OSError(ENOSYS): the stats run as before. */

#include "_compiled.h"

#include <errno.h>
#include <string.h>

#if defined(__linux__)
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#if defined(__linux__)
#define ENTRY_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#else
static PyObject *not_here(void) {
    errno = ENOSYS;
    return PyErr_SetFromErrno(PyExc_OSError);
}
#endif

/* watch_open() -> a new inotify fd, non-blocking and closed on exec. */
PyObject *compiled_watch_open(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
#if defined(__linux__)
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLong(fd);
#else
    return not_here();
#endif
}

/* watch_add(fd, path, mask, file) -> the watch descriptor; -1 when nothing is at ``path``
 * (its folder's watch reports it coming); -2 when ``file`` and ``path`` is a symbolic link
 * (a write to its target elsewhere would not be seen: the caller keeps the stats). A folder
 * (``file`` false) is watched with IN_ONLYDIR | IN_DONT_FOLLOW: a link or a file there is
 * -2 too. OSError for anything else (the watch limit reached...). */
static PyObject *watch_add(int fd, const char *path, unsigned int mask, int file);

PyObject *compiled_watch_add(PyObject *self, PyObject *args) {
    (void)self;
    int fd, file;
    unsigned int mask;
    PyObject *encoded; /* as os.stat encodes a path (a null byte: ValueError) */
    if (!PyArg_ParseTuple(args, "iO&Ip", &fd, PyUnicode_FSConverter, &encoded, &mask, &file))
        return NULL;
    PyObject *out = watch_add(fd, PyBytes_AsString(encoded), mask, file);
    Py_DECREF(encoded);
    return out;
}

static PyObject *watch_add(int fd, const char *path, unsigned int mask, int file) {
    if (path == NULL)
        return NULL;
#if defined(__linux__)
    uint32_t flags = mask | IN_DONT_FOLLOW | IN_MASK_ADD;
    if (file) {
        struct stat st;
        if (lstat(path, &st) != 0)
            return errno == ENOENT || errno == ENOTDIR ? PyLong_FromLong(-1)
                                                       : PyErr_SetFromErrno(PyExc_OSError);
        if (S_ISLNK(st.st_mode))
            return PyLong_FromLong(-2);
    } else {
        flags |= IN_ONLYDIR;
    }
    int wd = inotify_add_watch(fd, path, flags);
    if (wd >= 0)
        return PyLong_FromLong(wd);
    if (errno == ENOENT)
        return PyLong_FromLong(-1);
    if (errno == ENOTDIR)
        return PyLong_FromLong(-2);
    return PyErr_SetFromErrno(PyExc_OSError);
#else
    (void)fd;
    (void)path;
    (void)mask;
    (void)file;
    return not_here();
#endif
}

/* watch_remove(fd, wd) -> None: the watch gone (already gone: no error). */
PyObject *compiled_watch_remove(PyObject *self, PyObject *args) {
    (void)self;
    int fd, wd;
    if (!PyArg_ParseTuple(args, "ii", &fd, &wd))
        return NULL;
#if defined(__linux__)
    (void)inotify_rm_watch(fd, wd);
    Py_RETURN_NONE;
#else
    return not_here();
#endif
}

/* watch_ready(fd, mounts) -> 0 when nothing happened; 1 | 2: events are queued on ``fd``
 * (1) / the mount table changed since the last call (2; ``mounts``: /proc/self/mounts,
 * which poll reports once per change). One poll, no wait. */
PyObject *compiled_watch_ready(PyObject *self, PyObject *args) {
    (void)self;
    int fd, mounts;
    if (!PyArg_ParseTuple(args, "ii", &fd, &mounts))
        return NULL;
#if defined(__linux__)
    struct pollfd fds[2] = {{fd, POLLIN, 0}, {mounts, POLLPRI, 0}};
    int n;
    do {
        n = poll(fds, 2, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    long out = 0;
    if (fds[0].revents)
        out |= 1;
    if (fds[1].revents & (POLLPRI | POLLERR | POLLHUP | POLLNVAL))
        out |= 2;
    return PyLong_FromLong(out);
#else
    (void)fd;
    (void)mounts;
    return not_here();
#endif
}

/* watch_read(fd) -> the watch descriptors of the queued events that count, in order (-1 for
 * a queue that overflowed: events were lost), the queue emptied. A folder's watch also
 * reports what happens to the files in it (with their names): of those only an entry made,
 * deleted or renamed counts; a file's writes count through that file's own watch, where
 * the check looks at it, and a file it does not look at (a transcript, an older log) would
 * otherwise end the quiet path at each write. */
PyObject *compiled_watch_read(PyObject *self, PyObject *args) {
    (void)self;
    int fd;
    if (!PyArg_ParseTuple(args, "i", &fd))
        return NULL;
#if defined(__linux__)
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    /* aligned as struct inotify_event; a name is at most NAME_MAX + 1 bytes */
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return out;
        if (got <= 0) {
            if (got < 0)
                PyErr_SetFromErrno(PyExc_OSError);
            else
                PyErr_SetString(PyExc_OSError, "watch_read: end of the inotify stream");
            Py_DECREF(out);
            return NULL;
        }
        for (char *at = buf; at < buf + got;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)at;
            at += sizeof(struct inotify_event) + ev->len;
            if (ev->len > 0 && !(ev->mask & ENTRY_EVENTS))
                continue; /* a file in a watched folder written, touched, closed */
            PyObject *wd = PyLong_FromLong(ev->mask & IN_Q_OVERFLOW ? -1 : ev->wd);
            if (wd == NULL || PyList_Append(out, wd) < 0) {
                Py_XDECREF(wd);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(wd);
        }
    }
#else
    (void)fd;
    return not_here();
#endif
}
