/* What a question naming a time does to a keyword search's fused scores, for
 * _compiled_top.c's keyword_hits: fuse's date signal (fusion.DATE_WEIGHT, the chunk on a day
 * the question names: line_days.on_named_day) and the range boost (signals.Signals.adjust
 * with neither line meta nor recency: a dated chunk inside the time the question names).
 * The same doubles from the same operations in the same order (-ffp-contract=off). */

#include "_compiled.h"

#include <string.h>

/* ``s`` compared with ``day`` as Python compares two strs: -1, 0, 1; -2 with an error. */
static int compare(PyObject *a, PyObject *b) {
    int c = PyUnicode_Compare(a, b);
    if (c == -1 && PyErr_Occurred())
        return -2;
    return c;
}

/* ``spec``: None, or (days, their reaches, on_named_day, 1 - DATE_WEIGHT, DATE_WEIGHT,
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
    d->on_named_day = PyTuple_GetItem(spec, 2);
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

/* on_named_day(day, text, days): 1 or 0, -1 with an exception set. Its own date and the
 * reach (d < day <= _reach(d)) here; the lines' named days (a regex, remembered) asked of
 * on_named_day itself for a chunk within reach of a named day (few). */
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
    PyObject *on = PyObject_CallFunctionObjArgs(d->on_named_day, day, text, d->days, NULL);
    int r = on != NULL ? PyObject_IsTrue(on) : -1;
    Py_XDECREF(on);
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
