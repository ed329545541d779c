"""launch_activate_socket(3) through ctypes. macOS only: nothing imports this elsewhere.

``int launch_activate_socket(const char *name, int **fds, size_t *cnt)`` returns 0 and a
malloc'ed array of descriptors for the plist's ``Sockets`` entry ``name``, or an errno:
ENOENT (no such entry), ESRCH (this process is not managed by launchd), EALREADY (already
activated). The first two mean "started by hand" and give an empty list.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os


def activate_socket(name: str) -> list[int]:
    lib = ctypes.CDLL(
        ctypes.util.find_library("System") or "/usr/lib/libSystem.B.dylib", use_errno=True
    )
    activate = lib.launch_activate_socket
    activate.argtypes = [
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_int)),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    activate.restype = ctypes.c_int
    free = lib.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None

    fds = ctypes.POINTER(ctypes.c_int)()
    count = ctypes.c_size_t(0)
    err = activate(name.encode(), ctypes.byref(fds), ctypes.byref(count))
    if err in (errno.ENOENT, errno.ESRCH):
        return []
    if err != 0:
        raise OSError(err, os.strerror(err))
    try:
        return [int(fds[i]) for i in range(count.value)]
    finally:
        free(ctypes.cast(fds, ctypes.c_void_p))
