/* A search's candidates made from their rows: candidates.load_candidates' objects, each
 * field set as the dataclass's __init__ sets it (the class has no __post_init__ and plain
 * defaults: candidates.py checks), through the slots' descriptors (compiled_attr) instead of
 * a call of __init__ per candidate. candidates.py keeps the Python version, used when this
 * module is absent or this gives None, and the tests compare the two. */

#include "_compiled.h"

#include <string.h>

#define ROW_FIELDS 8 /* rows.Row */

/* make_candidates(cls, names, ids, found, bm25, tail): [cls(i, *found[i], bm25.get(i),
 * *tail) for i in ids if i in found], the fields named ``names`` in order; None when a row
 * is not a tuple of ROW_FIELDS or the names do not fit (the caller does it in Python). */
PyObject *compiled_make_candidates(PyObject *self, PyObject *args) {
    PyObject *cls, *names, *ids, *found, *bm25, *tail;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!", &PyType_Type, &cls, &PyTuple_Type, &names,
                          &PyList_Type, &ids, &PyDict_Type, &found, &bm25, &PyTuple_Type, &tail))
        return NULL;
    Py_ssize_t n_tail = PyTuple_Size(tail), n_fields = PyTuple_Size(names);
    if (n_fields != 2 + ROW_FIELDS + n_tail || n_fields > 64 ||
        (bm25 != Py_None && !PyDict_Check(bm25)))
        Py_RETURN_NONE;
    /* Setting a field the usual way (another class's) may run Python, which may change
     * ``ids``, ``found`` or ``bm25``: the ids held as they are now, a row and its score held
     * while they are set (a row no longer a plain one then: None, Python does it all) */
    Py_ssize_t n = 0;
    PyObject **held = compiled_hold(ids, &n);
    if (held == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) { /* every row a plain one first: nothing half made */
        PyObject *row = PyDict_GetItemWithError(found, held[i]);
        if ((row == NULL && PyErr_Occurred()) ||
            (row != NULL && (!PyTuple_Check(row) || PyTuple_Size(row) != ROW_FIELDS))) {
            compiled_release(held, n);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
    }
    newfunc make = NULL;
    void *slot = PyType_GetSlot((PyTypeObject *)cls, Py_tp_new);
    memcpy(&make, &slot, sizeof make);
    if (make == NULL) { /* a class that cannot be made: Python says why */
        compiled_release(held, n);
        Py_RETURN_NONE;
    }
    PyObject *none_args = PyTuple_New(0), *out = PyList_New(0);
    compiled_attr attrs[64];
    Py_ssize_t ready = 0;
    if (none_args == NULL || out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = held[i];
        PyObject *row = PyDict_GetItemWithError(found, id), *score = NULL;
        if (row == NULL) {
            if (PyErr_Occurred())
                goto fail;
            continue;
        }
        if (!PyTuple_Check(row) || PyTuple_Size(row) != ROW_FIELDS) {
            Py_CLEAR(out);
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
        Py_INCREF(row);
        score = bm25 != Py_None ? PyDict_GetItemWithError(bm25, id) : NULL;
        Py_XINCREF(score);
        PyObject *c = score != NULL || !PyErr_Occurred() ? make((PyTypeObject *)cls, none_args, NULL)
                                                         : NULL;
        if (c == NULL)
            goto fail_row;
        for (; ready < n_fields; ready++)
            if (compiled_attr_init(&attrs[ready], c, PyTuple_GetItem(names, ready)) < 0)
                goto fail_c;
        for (Py_ssize_t k = 0; k < n_fields; k++) {
            PyObject *value = k == 0                ? id
                              : k <= ROW_FIELDS     ? PyTuple_GetItem(row, k - 1)
                              : k == ROW_FIELDS + 1 ? (score ? score : Py_None)
                                                    : PyTuple_GetItem(tail, k - ROW_FIELDS - 2);
            if (compiled_attr_set(&attrs[k], c, value) < 0)
                goto fail_c;
        }
        int appended = PyList_Append(out, c);
        Py_DECREF(c);
        Py_DECREF(row);
        Py_XDECREF(score);
        if (appended < 0)
            goto fail;
        continue;
    fail_c:
        Py_DECREF(c);
    fail_row:
        Py_DECREF(row);
        Py_XDECREF(score);
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    for (Py_ssize_t k = 0; k < ready; k++)
        compiled_attr_clear(&attrs[k]);
    Py_XDECREF(none_args);
    compiled_release(held, n);
    return out;
}
