/* An answer's frame: the wire header (the body's length, 4 bytes big-endian) and the body,
 * the bytes msgpack.Packer(use_bin_type=True).pack gives (rpc/server.py's _pack), written in
 * one pass into one buffer. Only the exact types an answer is made of: None, bool, int (64
 * bits), float, str, bytes, dict, list and tuple. Anything else (a subclass, a larger int, a
 * str that is not valid UTF-8, a deeper nesting than MAX_DEPTH, a body of 4 GiB) gives None
 * with no error set: the caller packs it with msgpack, which packs it or raises as before.
 *
 * msgpack's choices, kept: an int in the fewest bytes (positive fixint, uint8/16/32/64 for
 * one above 127, negative fixint down to -32, then int8/16/32/64); a float as float 64; a
 * str as fixstr, str 8, str 16 or str 32 by its UTF-8 length; bytes as bin 8, 16 or 32; a
 * dict as fixmap, map 16 or map 32 in its order; a list or tuple as fixarray, array 16 or
 * array 32. Packing runs no Python (exact types only), so nothing can change what it reads. */

#include "_compiled.h"

#include <string.h>

#define MAX_DEPTH 64
#define FIRST_BYTES 16384
#define HEADER_BYTES 4

typedef struct {
    unsigned char *buf;
    size_t len, cap;
} out_buf;

enum { PACKED = 0, FAILED = -1, NOT_OURS = -2 };

static int grow(out_buf *o, size_t more) {
    size_t cap = o->cap;
    while (cap < o->len + more)
        cap *= 2;
    unsigned char *grown = PyMem_Realloc(o->buf, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    o->buf = grown;
    o->cap = cap;
    return PACKED;
}

static inline int room(out_buf *o, size_t more) {
    return o->len + more <= o->cap ? PACKED : grow(o, more);
}

/* ``tag`` then the ``width`` (0, 1, 2, 4 or 8) low bytes of ``value``, big-endian. */
static inline int put(out_buf *o, unsigned char tag, uint64_t value, int width) {
    if (room(o, 9) < 0)
        return FAILED;
    unsigned char *at = o->buf + o->len;
    at[0] = tag;
    switch (width) {
    case 8:
        at[1] = (unsigned char)(value >> 56), at[2] = (unsigned char)(value >> 48);
        at[3] = (unsigned char)(value >> 40), at[4] = (unsigned char)(value >> 32);
        at[5] = (unsigned char)(value >> 24), at[6] = (unsigned char)(value >> 16);
        at[7] = (unsigned char)(value >> 8), at[8] = (unsigned char)value;
        break;
    case 4:
        at[1] = (unsigned char)(value >> 24), at[2] = (unsigned char)(value >> 16);
        at[3] = (unsigned char)(value >> 8), at[4] = (unsigned char)value;
        break;
    case 2:
        at[1] = (unsigned char)(value >> 8), at[2] = (unsigned char)value;
        break;
    case 1:
        at[1] = (unsigned char)value;
        break;
    default:
        break;
    }
    o->len += 1 + (size_t)width;
    return PACKED;
}

static int put_bytes(out_buf *o, const char *data, size_t n) {
    if (room(o, n) < 0)
        return FAILED;
    memcpy(o->buf + o->len, data, n);
    o->len += n;
    return PACKED;
}

static inline int put_unsigned(out_buf *o, uint64_t v) {
    if (v < 128)
        return put(o, (unsigned char)v, 0, 0);
    if (v < 256)
        return put(o, 0xcc, v, 1);
    if (v < 65536)
        return put(o, 0xcd, v, 2);
    if (v < 4294967296ULL)
        return put(o, 0xce, v, 4);
    return put(o, 0xcf, v, 8);
}

static int put_signed(out_buf *o, long long v) {
    if (v >= 0)
        return put_unsigned(o, (uint64_t)v);
    if (v >= -32)
        return put(o, (unsigned char)(int8_t)v, 0, 0);
    if (v >= -128)
        return put(o, 0xd0, (uint64_t)v, 1);
    if (v >= -32768)
        return put(o, 0xd1, (uint64_t)v, 2);
    if (v >= -2147483648LL)
        return put(o, 0xd2, (uint64_t)v, 4);
    return put(o, 0xd3, (uint64_t)v, 8);
}

static int put_int(out_buf *o, PyObject *x) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (v == -1 && PyErr_Occurred())
        return FAILED;
    if (overflow == 0)
        return put_signed(o, v);
    if (overflow < 0)
        return NOT_OURS; /* below int64: msgpack raises */
    unsigned long long u = PyLong_AsUnsignedLongLong(x);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear(); /* above uint64: msgpack raises */
        return NOT_OURS;
    }
    return put_unsigned(o, u);
}

static int put_float(out_buf *o, PyObject *x) {
    double d = PyFloat_AsDouble(x);
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return put(o, 0xcb, bits, 8);
}

/* A length's header: fixed (below ``fixed_limit``, ``fixed_tag`` | n), then 8 (when
 * ``tag8``), 16 and 32 bits. */
static inline int put_length(out_buf *o, size_t n, unsigned char fixed_tag, size_t fixed_limit,
                      unsigned char tag8, unsigned char tag16, unsigned char tag32) {
    if (n < fixed_limit)
        return put(o, (unsigned char)(fixed_tag | n), 0, 0);
    if (tag8 && n < 256)
        return put(o, tag8, n, 1);
    if (n < 65536)
        return put(o, tag16, n, 2);
    if (n <= 0xffffffffULL)
        return put(o, tag32, n, 4);
    return NOT_OURS; /* msgpack raises */
}

static int put_str(out_buf *o, PyObject *x) {
    Py_ssize_t n = 0;
    const char *utf8 = PyUnicode_AsUTF8AndSize(x, &n);
    if (utf8 == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeError))
            return FAILED;
        PyErr_Clear(); /* a lone surrogate: msgpack raises */
        return NOT_OURS;
    }
    int r = put_length(o, (size_t)n, 0xa0, 32, 0xd9, 0xda, 0xdb);
    return r < 0 ? r : put_bytes(o, utf8, (size_t)n);
}

static int put_bin(out_buf *o, PyObject *x) {
    char *data = PyBytes_AsString(x);
    Py_ssize_t n = PyBytes_Size(x);
    if (data == NULL || n < 0)
        return FAILED;
    int r = put_length(o, (size_t)n, 0, 0, 0xc4, 0xc5, 0xc6);
    return r < 0 ? r : put_bytes(o, data, (size_t)n);
}

static int put_any(out_buf *o, PyObject *x, int depth);

static int put_map(out_buf *o, PyObject *x, int depth) {
    int r = put_length(o, (size_t)PyDict_Size(x), 0x80, 16, 0, 0xde, 0xdf);
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (r == PACKED && PyDict_Next(x, &pos, &key, &value))
        if ((r = put_any(o, key, depth + 1)) == PACKED)
            r = put_any(o, value, depth + 1);
    return r;
}

static int put_array(out_buf *o, PyObject *x, int depth) {
    int list = PyList_CheckExact(x);
    Py_ssize_t n = list ? PyList_Size(x) : PyTuple_Size(x);
    int r = put_length(o, (size_t)n, 0x90, 16, 0, 0xdc, 0xdd);
    for (Py_ssize_t i = 0; r == PACKED && i < n; i++)
        r = put_any(o, list ? PyList_GetItem(x, i) : PyTuple_GetItem(x, i), depth + 1);
    return r;
}

static int put_any(out_buf *o, PyObject *x, int depth) {
    if (depth > MAX_DEPTH)
        return NOT_OURS;
    if (PyUnicode_CheckExact(x))
        return put_str(o, x);
    if (PyLong_CheckExact(x))
        return put_int(o, x);
    if (PyFloat_CheckExact(x))
        return put_float(o, x);
    if (x == Py_None)
        return put(o, 0xc0, 0, 0);
    if (x == Py_True)
        return put(o, 0xc3, 0, 0);
    if (x == Py_False)
        return put(o, 0xc2, 0, 0);
    if (PyDict_CheckExact(x))
        return put_map(o, x, depth);
    if (PyList_CheckExact(x) || PyTuple_CheckExact(x))
        return put_array(o, x, depth);
    if (PyBytes_CheckExact(x))
        return put_bin(o, x);
    return NOT_OURS;
}

/* pack_frame(obj) -> the frame's bytes, or None (see above). */
PyObject *compiled_pack_frame(PyObject *self, PyObject *obj) {
    (void)self;
    out_buf o = {PyMem_Malloc(FIRST_BYTES), HEADER_BYTES, FIRST_BYTES};
    if (o.buf == NULL)
        return PyErr_NoMemory();
    int r = put_any(&o, obj, 0);
    PyObject *frame = NULL;
    size_t body = o.len - HEADER_BYTES;
    if (r == PACKED && body <= 0xffffffffULL) {
        for (int i = 0; i < HEADER_BYTES; i++)
            o.buf[i] = (unsigned char)(body >> (8 * (HEADER_BYTES - 1 - i)));
        frame = PyBytes_FromStringAndSize((const char *)o.buf, (Py_ssize_t)o.len);
    } else if (r != FAILED) {
        frame = Py_NewRef(Py_None);
    }
    PyMem_Free(o.buf);
    return frame;
}
