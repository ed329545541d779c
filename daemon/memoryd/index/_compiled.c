/* memoryd.index._compiled: the module, and the helpers its functions share (_compiled.h). */

#include "_compiled.h"

#include <string.h>

int compiled_int32(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 4 || view->format == NULL ||
        (strcmp(view->format, "i") != 0 && strcmp(view->format, "<i") != 0 &&
         strcmp(view->format, "=i") != 0)) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "expected a contiguous int32 array");
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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_compiled", "The index's compiled part (_compiled.h).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__compiled(void) { return PyModule_Create(&module); }
