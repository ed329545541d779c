/* Compiled window similarities: vectors/window_sims.py's gather of the kept windows and
 * each chunk's best window. Copies and comparisons only (the product itself stays numpy's):
 * the same rows, the same choices, the same doubles as the numpy versions kept there (used
 * when this module is absent, and compared with these by the tests). */

#include "_compiled.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A contiguous buffer of ``itemsize``-byte items whose format is one of ``formats``. */
static int typed(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *formats,
                 int flags, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | flags) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (view->itemsize != itemsize || strlen(f) != 1 || strchr(formats, *f) == NULL) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "expected a contiguous %s array", what);
        return -1;
    }
    return 0;
}

/* Span ``j`` of ``spans`` (a sequence of (first row, rows)), checked against ``limit`` rows. */
static int span_at(PyObject *spans, Py_ssize_t j, Py_ssize_t limit, Py_ssize_t *start,
                   Py_ssize_t *count) {
    PyObject *span = compiled_item(spans, j);
    if (span == NULL)
        return -1;
    PyObject *a = compiled_item(span, 0);
    PyObject *b = a ? compiled_item(span, 1) : NULL;
    *start = a ? PyLong_AsSsize_t(a) : -1;
    *count = b ? PyLong_AsSsize_t(b) : -1;
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_DECREF(span);
    if (PyErr_Occurred())
        return -1;
    if (*start < 0 || *count < 1 || *start > limit - *count) {
        PyErr_SetString(PyExc_ValueError, "a span outside the rows");
        return -1;
    }
    return 0;
}

/* take_spans(vectors, spans, out) -> rows: each span's rows of ``vectors`` (rows, dims),
 * one after another into ``out`` (as many floats or more); how many rows were written. */
PyObject *compiled_take_spans(PyObject *self, PyObject *args) {
    PyObject *vec_obj, *spans, *out_obj;
    Py_buffer vv, ov;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &vec_obj, &spans, &out_obj))
        return NULL;
    if (typed(vec_obj, &vv, 4, "f", PyBUF_ND, "float32") < 0)
        return NULL;
    if (typed(out_obj, &ov, 4, "f", PyBUF_WRITABLE, "float32") < 0) {
        PyBuffer_Release(&vv);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PySequence_Size(spans);
    if (n < 0)
        goto done;
    if (vv.ndim != 2) {
        PyErr_SetString(PyExc_ValueError, "expected vectors of two dimensions");
        goto done;
    }
    Py_ssize_t rows = vv.shape[0], dims = vv.shape[1];
    Py_ssize_t room = ov.len / 4, at = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t start, count;
        if (span_at(spans, j, rows, &start, &count) < 0)
            goto done;
        if (dims > 0 && count > (room - at) / dims) {
            PyErr_SetString(PyExc_ValueError, "out is too small");
            goto done;
        }
        memcpy((float *)ov.buf + at, (const float *)vv.buf + start * dims,
               (size_t)(count * dims) * sizeof(float));
        at += count * dims;
    }
    result = PyLong_FromSsize_t(dims > 0 ? at / dims : 0);
done:
    PyBuffer_Release(&ov);
    PyBuffer_Release(&vv);
    return result;
}

/* span_best(sims, spans, wids) -> (best, sims): the spans' rows laid one after another in
 * ``sims`` (float32); for each span the first of its highest similarities (a NaN below any
 * number, as a stable sort of the negated similarities orders them), as its window number
 * (``wids`` of the span's rows, modulo ``slots``) and that similarity as a float. */
PyObject *compiled_span_best(PyObject *self, PyObject *args) {
    PyObject *sims_obj, *spans, *wids_obj;
    Py_ssize_t slots;
    Py_buffer sv, wv;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOn", &sims_obj, &spans, &wids_obj, &slots))
        return NULL;
    if (slots < 1) {
        PyErr_SetString(PyExc_ValueError, "slots must be positive");
        return NULL;
    }
    if (typed(sims_obj, &sv, 4, "f", 0, "float32") < 0)
        return NULL;
    if (typed(wids_obj, &wv, 8, "qlQL", 0, "int64") < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    PyObject *best = NULL, *values = NULL, *result = NULL;
    const float *s = (const float *)sv.buf;
    const int64_t *w = (const int64_t *)wv.buf;
    Py_ssize_t n_sims = sv.len / 4, n_wids = wv.len / 8, off = 0;
    Py_ssize_t n = PySequence_Size(spans);
    if (n < 0 || (best = PyList_New(n)) == NULL || (values = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t start, count;
        if (span_at(spans, j, n_wids, &start, &count) < 0)
            goto done;
        if (count > n_sims - off) {
            PyErr_SetString(PyExc_ValueError, "fewer similarities than the spans' rows");
            goto done;
        }
        Py_ssize_t at = 0;
        float top = s[off];
        for (Py_ssize_t r = 1; r < count; r++) {
            float v = s[off + r];
            if (v > top || (isnan(top) && !isnan(v))) {
                top = v;
                at = r;
            }
        }
        int64_t number = ((w[start + at] % (int64_t)slots) + slots) % (int64_t)slots;
        PyObject *b = PyLong_FromLongLong((long long)number);
        PyObject *v = b ? PyFloat_FromDouble((double)top) : NULL;
        if (v == NULL) {
            Py_XDECREF(b);
            goto done;
        }
        PyList_SetItem(best, j, b);
        PyList_SetItem(values, j, v);
        off += count;
    }
    result = PyTuple_Pack(2, best, values);
done:
    Py_XDECREF(best);
    Py_XDECREF(values);
    PyBuffer_Release(&wv);
    PyBuffer_Release(&sv);
    return result;
}
