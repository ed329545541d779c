/* What a question naming a time does to a keyword search's fused scores, for
 * _compiled_top.c's keyword_hits: fuse's date signal (fusion.DATE_WEIGHT, the chunk on a day
 * the question names: line_days.on_named_day) and the range boost (signals.Signals.adjust
 * with neither line meta nor recency: a dated chunk inside the time the question names).
 * The same doubles from the same operations in the same order (-ffp-contract=off). And the
 * chunks of the named days from the keyword copy's columns (day_chunks). */

#include "_compiled.h"

#include <stdlib.h>
#include <string.h>

/* ``s`` compared with ``day`` as Python compares two strs: -1, 0, 1; -2 with an error. */
static int compare(PyObject *a, PyObject *b) {
    int c = PyUnicode_Compare(a, b);
    if (c == -1 && PyErr_Occurred())
        return -2;
    return c;
}

/* ``spec``: None, or (days, their reaches, named_days, 1 - DATE_WEIGHT, DATE_WEIGHT,
 * since, until, 1 + RANGE_BOOST), days and reaches tuples of str (empty: no named day),
 * since and until a str or None (both None: no range). 0, -1 with a TypeError, or -2 for
 * a value not of those plain types (the long way then). */
int compiled_dating_read(PyObject *spec, compiled_dating *d) {
    memset(d, 0, sizeof(*d));
    if (spec == Py_None)
        return 0;
    if (!PyTuple_Check(spec) || PyTuple_Size(spec) != 8) {
        PyErr_SetString(PyExc_TypeError, "keyword_hits: dating must be None or 8 items");
        return -1;
    }
    PyObject *days = PyTuple_GetItem(spec, 0), *reaches = PyTuple_GetItem(spec, 1);
    if (!PyTuple_CheckExact(days) || !PyTuple_CheckExact(reaches) ||
        PyTuple_Size(days) != PyTuple_Size(reaches))
        return -2;
    for (Py_ssize_t i = 0; i < PyTuple_Size(days); i++)
        if (!PyUnicode_CheckExact(PyTuple_GetItem(days, i)) ||
            !PyUnicode_CheckExact(PyTuple_GetItem(reaches, i)))
            return -2;
    d->days = PyTuple_Size(days) > 0 ? days : NULL;
    d->reaches = reaches;
    d->named_days = PyTuple_GetItem(spec, 2);
    d->keep_w = PyFloat_AsDouble(PyTuple_GetItem(spec, 3));
    d->weight = PyFloat_AsDouble(PyTuple_GetItem(spec, 4));
    d->factor = PyFloat_AsDouble(PyTuple_GetItem(spec, 7));
    if (PyErr_Occurred())
        return -1;
    PyObject *bounds[2] = {PyTuple_GetItem(spec, 5), PyTuple_GetItem(spec, 6)};
    for (int k = 0; k < 2; k++) {
        if (bounds[k] != Py_None && !PyUnicode_CheckExact(bounds[k]))
            return -2;
    }
    d->since = bounds[0] != Py_None ? bounds[0] : NULL;
    d->until = bounds[1] != Py_None ? bounds[1] : NULL;
    d->active = d->days != NULL || d->since != NULL || d->until != NULL;
    return 0;
}

/* on_named_day(day, text, days): 1 or 0, -1 with an exception set. Its own date, the
 * reach (d < day <= _reach(d)) and any(d in days for d in named_days(text, day)) here, the
 * lines' named days (a regex, remembered) asked of named_days for a chunk within reach of
 * a named day (few). */
static int on_named_day(const compiled_dating *d, PyObject *day, PyObject *text) {
    Py_ssize_t n = PyTuple_Size(d->days);
    for (Py_ssize_t i = 0; i < n; i++) {
        int c = compare(day, PyTuple_GetItem(d->days, i));
        if (c == -2)
            return -1;
        if (c == 0)
            return 1;
    }
    if (PyUnicode_GetLength(day) == 0)
        return 0;
    int reached = 0;
    for (Py_ssize_t i = 0; i < n && !reached; i++) {
        int after = compare(PyTuple_GetItem(d->days, i), day);
        int within = after == -1 ? compare(day, PyTuple_GetItem(d->reaches, i)) : 1;
        if (after == -2 || within == -2)
            return -1;
        reached = after == -1 && within <= 0;
    }
    if (!reached)
        return 0;
    PyObject *named = PyObject_CallFunctionObjArgs(d->named_days, text, day, NULL);
    PyObject *it = named != NULL ? PyObject_GetIter(named) : NULL, *item;
    int r = it != NULL ? 0 : -1;
    while (r == 0 && (item = PyIter_Next(it)) != NULL) {
        r = PySequence_Contains(d->days, item); /* ``d in days``: 1 ends it */
        Py_DECREF(item);
    }
    if (r == 0 && PyErr_Occurred())
        r = -1;
    Py_XDECREF(it);
    Py_XDECREF(named);
    return r;
}

int compiled_dated(const compiled_dating *d, PyObject *day, PyObject *text, double *s) {
    if (d->days != NULL) { /* (1 - DATE_WEIGHT) * s + DATE_WEIGHT * on_named_day(...) */
        int on = on_named_day(d, day, text);
        if (on < 0)
            return -1;
        *s = d->keep_w * *s + d->weight * (on ? 1.0 : 0.0);
    }
    if ((d->since != NULL || d->until != NULL) && PyUnicode_GetLength(day) > 0) {
        int c1 = d->since != NULL ? compare(day, d->since) : 0; /* day >= since */
        int c2 = d->until != NULL ? compare(day, d->until) : 0; /* day <= until */
        if (c1 == -2 || c2 == -2)
            return -1;
        if (c1 >= 0 && c2 <= 0)
            *s = *s * d->factor; /* nudge(s, RANGE_BOOST) */
    }
    return 0;
}

static int by_id(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return a < b ? -1 : (a > b);
}

/* day_chunks(day, alive, source, chunk_id, used, numbers, codes, limit): keyword/build.py's
 * chunks_on_days over the copy's columns (int32 days, bools, int8 source codes, int64 ids;
 * the first ``used`` slots): the ids of the alive slots whose day is one of ``numbers``
 * and whose source code is one of ``codes`` (a tuple of ints), ascending, the first
 * ``limit`` (>= 0). One pass, no array made: a question naming a day is rare, so the few
 * numpy calls it took came cold. */
PyObject *compiled_day_chunks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *day_obj, *alive_obj, *source_obj, *ids_obj, *numbers, *codes;
    Py_ssize_t used, limit;
    if (!PyArg_ParseTuple(args, "OOOOnO!O!n", &day_obj, &alive_obj, &source_obj, &ids_obj, &used,
                          &PyTuple_Type, &numbers, &PyTuple_Type, &codes, &limit))
        return NULL;
    Py_buffer views[4];
    PyObject *objs[4] = {day_obj, alive_obj, source_obj, ids_obj};
    const Py_ssize_t sizes[4] = {4, 1, 1, 8};
    const char *kinds[4] = {"i", "?", "b", "lq"};
    int held = 0;
    PyObject *out = NULL;
    int64_t *found = NULL;
    long long want[8], want_codes[8];
    Py_ssize_t n_want = PyTuple_Size(numbers), n_codes = PyTuple_Size(codes);
    if (n_want > 8 || n_codes > 8 || used < 0 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "day_chunks: at most 8 days and codes, used/limit >= 0");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n_want; k++)
        want[k] = PyLong_AsLongLong(PyTuple_GetItem(numbers, k));
    for (Py_ssize_t k = 0; k < n_codes; k++)
        want_codes[k] = PyLong_AsLongLong(PyTuple_GetItem(codes, k));
    if (PyErr_Occurred())
        return NULL;
    for (; held < 4; held++)
        if (compiled_buffer(objs[held], &views[held], sizes[held], kinds[held]) < 0)
            goto done;
    for (int k = 0; k < 4; k++)
        if (views[k].len / sizes[k] < used) {
            PyErr_SetString(PyExc_ValueError, "day_chunks: a column shorter than used");
            goto done;
        }
    const int32_t *day = views[0].buf;
    const uint8_t *alive = views[1].buf;
    const int8_t *source = views[2].buf;
    const int64_t *ids = views[3].buf;
    found = PyMem_Malloc((size_t)(used ? used : 1) * sizeof(int64_t));
    if (found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t s = 0; s < used; s++) {
        int on = 0, of = 0;
        for (Py_ssize_t k = 0; k < n_want && !on; k++)
            on = day[s] == want[k];
        for (Py_ssize_t k = 0; k < n_codes && on && !of; k++)
            of = source[s] == want_codes[k];
        if (on && of && alive[s])
            found[m++] = ids[s];
    }
    qsort(found, (size_t)m, sizeof(int64_t), by_id);
    Py_ssize_t n = m < limit ? m : limit;
    out = PyList_New(n);
    for (Py_ssize_t k = 0; out != NULL && k < n; k++) {
        PyObject *id = PyLong_FromLongLong(found[k]);
        if (id == NULL)
            Py_CLEAR(out);
        else
            PyList_SetItem(out, k, id);
    }
done:
    PyMem_Free(found);
    for (int k = 0; k < held; k++)
        PyBuffer_Release(&views[k]);
    return out;
}
