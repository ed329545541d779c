/* memoryd.index._compiled: the module, and the helpers its functions share (_compiled.h). */

#include "_compiled.h"

#include <string.h>

int compiled_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *kinds) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format;
    if (f != NULL && (f[0] == '@' || f[0] == '=' || f[0] == '<'))
        f++; /* native, standard or little-endian sizes: the item size is checked below */
    if (view->itemsize != itemsize || f == NULL || f[0] == '\0' || f[1] != '\0' ||
        strchr(kinds, f[0]) == NULL) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "expected a contiguous array of '%s' items of %zd bytes",
                     kinds, itemsize);
        return -1;
    }
    return 0;
}

PyObject *compiled_item(PyObject *seq, Py_ssize_t i) {
    if (PyTuple_Check(seq) && i < PyTuple_Size(seq)) {
        PyObject *it = PyTuple_GetItem(seq, i);
        Py_XINCREF(it);
        return it;
    }
    if (PyList_Check(seq) && i < PyList_Size(seq)) {
        PyObject *it = PyList_GetItem(seq, i);
        Py_XINCREF(it);
        return it;
    }
    return PySequence_GetItem(seq, i);
}

static PyMethodDef methods[] = {
    {"line_scores", compiled_line_scores, METH_VARARGS,
     "line_scores(chunks, numbers, weights) -> per chunk, per line, the summed weights"},
    {"best_window", compiled_best_window, METH_VARARGS,
     "best_window(lines, scores, budget) -> (first, last): snippets.best_window"},
    {"take_spans", compiled_take_spans, METH_VARARGS,
     "take_spans(vectors, spans, out) -> rows: the spans' rows of vectors, one after another"},
    {"span_best", compiled_span_best, METH_VARARGS,
     "span_best(sims, spans, wids, slots) -> (best, sims): window_sims.py's best windows"},
    {"bm25_top", compiled_bm25_top, METH_VARARGS,
     "bm25_top(terms, norm, keep, chunk_id, limit) -> [(chunk id, score)]: bm25.ranked_all"},
    {"known_top", compiled_known_top, METH_VARARGS,
     "known_top(cands, vector, hybrid, idf_total, weights, keep) -> fusion._known_top, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_compiled", "The index's compiled part (_compiled.h).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__compiled(void) { return PyModule_Create(&module); }
