/* A keyword search's hits as shown.shown_hits makes them from its fused candidates
 * (_compiled_top.c's keyword_hits): a hit's snippet (the compiled snippet's calls of the
 * snippets' caches, make_snippet when the window is one line longer than the budget), its
 * shown text and tier (no line meta), the SearchHit made as tuple.__new__ makes it; no candidate.
 * The window is _compiled_lines.c's (compiled_window_doubles). */

#include "_compiled.h"

#include <string.h>

#define ROW_SOURCE 1 /* rows.Row: path, source, day, start_line, end_line, heading, text, ... */
#define ROW_TEXT 6

/* An entry's snippet as (body, first line, last line), as compiled_snippet makes it (its
 * calls of text_lines and whole_lines), else ``snippet_of`` (make_snippet: the window is
 * one line longer than the budget); ``scores``: its lines (n), snippet_scores' zeros when
 * none. A new reference, or NULL with an exception set. */
static PyObject *snippet_parts(const compiled_show *sh, PyObject *row, const double *scores,
                               Py_ssize_t n) {
    PyObject *text = PyTuple_GetItem(row, ROW_TEXT);
    PyObject *start_obj = PyTuple_GetItem(row, 3), *end_obj = PyTuple_GetItem(row, 4);
    Py_ssize_t start = PyLong_AsSsize_t(start_obj), end = PyLong_AsSsize_t(end_obj);
    if (PyErr_Occurred())
        return NULL;
    PyObject *lines = PyObject_CallFunctionObjArgs(sh->text_lines, text, NULL);
    if (lines == NULL)
        return NULL;
    PyObject *out = NULL, *first_obj = NULL, *last_obj = NULL, *filled = NULL;
    double *zeros = NULL;
    Py_ssize_t n_text = PySequence_Size(lines), first = 0, last = 0;
    if (n_text < 0)
        goto done;
    if (n == 0) { /* c.lines empty: [0.0] * (text.count("\n") + 1), a line each */
        zeros = PyMem_Calloc((size_t)(n_text ? n_text : 1), sizeof(double));
        if (zeros == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        scores = zeros;
        n = n_text;
    }
    if (compiled_window_doubles(lines, scores, n, sh->budget_n, &first, &last) < 0)
        goto done;
    first_obj = PyLong_FromSsize_t(first);
    last_obj = first_obj ? PyLong_FromSsize_t(last) : NULL;
    filled = last_obj ? PyObject_CallFunctionObjArgs(sh->whole_lines, text, first_obj, last_obj,
                                                     sh->budget, NULL)
                      : NULL;
    if (filled == Py_None) {
        PyObject *as_list = compiled_float_list(scores, n, sh->zero);
        out = as_list ? PyObject_CallFunctionObjArgs(sh->snippet_of, text, start_obj, end_obj,
                                                     as_list, NULL)
                      : NULL;
        Py_XDECREF(as_list);
        if (out != NULL && (!PyTuple_Check(out) || PyTuple_Size(out) != 3)) {
            PyErr_SetString(PyExc_TypeError, "snippet_of must give (body, first, last)");
            Py_CLEAR(out);
        }
        goto done;
    }
    PyObject *body = NULL;
    Py_ssize_t shown_last = 0;
    if (filled == NULL || compiled_body_last(filled, &body, &shown_last) < 0)
        goto done;
    if (n_text == end - start + 1) { /* mapped: else a fragment or a transcript chunk */
        PyObject *a = PyLong_FromSsize_t(start + first);
        PyObject *b = a ? PyLong_FromSsize_t(start + shown_last) : NULL;
        out = b ? PyTuple_Pack(3, body, a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
    } else {
        out = PyTuple_Pack(3, body, start_obj, end_obj);
    }
done:
    PyMem_Free(zeros);
    Py_XDECREF(filled);
    Py_XDECREF(first_obj);
    Py_XDECREF(last_obj);
    Py_DECREF(lines);
    return out;
}

/* tier_of(path, source): a new reference, or NULL with an exception set. */
static PyObject *tier_of(const compiled_show *sh, PyObject *path, PyObject *source) {
    int sessions = PyObject_RichCompareBool(source, sh->sessions, Py_EQ);
    int curated = sessions == 0 ? PySequence_Contains(sh->curated, path) : 0;
    if (sessions < 0 || curated < 0)
        return NULL;
    PyObject *tier = sessions ? sh->tier_sessions : curated ? sh->tier_curated
                                                            : sh->tier_episodic;
    Py_INCREF(tier);
    return tier;
}

/* One entry's hit (its lines: ``scores``, n of them), as shown_hits makes it of the
 * entry's candidate when no line meta is asked: its snippet, shown_text, tier_of,
 * the tuple made as tuple.__new__ makes it. A new reference, or NULL with an exception set. */
PyObject *compiled_hit_of(const compiled_show *sh, PyObject *row, double s, double t_score,
                          const double *scores, Py_ssize_t n) {
    PyObject *snip = snippet_parts(sh, row, scores, n);
    if (snip == NULL)
        return NULL;
    PyObject *path = PyTuple_GetItem(row, 0), *source = PyTuple_GetItem(row, ROW_SOURCE);
    PyObject *first = PyTuple_GetItem(snip, 1), *last = PyTuple_GetItem(snip, 2);
    PyObject *shown = PyObject_CallFunctionObjArgs(sh->shown_text, PyTuple_GetItem(snip, 0), NULL);
    PyObject *tier = shown ? tier_of(sh, path, source) : NULL;
    PyObject *score = tier ? PyFloat_FromDouble(s) : NULL;
    PyObject *t = score ? PyFloat_FromDouble(t_score) : NULL;
    PyObject *hit = t ? sh->alloc((PyTypeObject *)sh->hit_type, 13) : NULL;
    if (hit == NULL) {
        Py_XDECREF(shown);
        Py_XDECREF(tier);
        Py_XDECREF(score);
        Py_XDECREF(t);
    } else { /* SearchHit's fields in order; each PyTuple_SetItem steals its reference */
        PyObject *fields[13] = {
            Py_NewRef(path), Py_NewRef(PyTuple_GetItem(row, 3)),
            Py_NewRef(PyTuple_GetItem(row, 4)), score, shown, Py_NewRef(first),
            Py_NewRef(last), Py_NewRef(source), Py_NewRef(PyTuple_GetItem(row, 5)),
            Py_NewRef(Py_None), t, tier, Py_NewRef(Py_None)}; /* no meta: none asked */
        for (Py_ssize_t k = 0; k < 13; k++)
            PyTuple_SetItem(hit, k, fields[k]);
    }
    Py_DECREF(snip);
    return hit;
}

