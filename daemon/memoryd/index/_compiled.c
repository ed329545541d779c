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

/* A type's slot function (PyType_GetSlot gives it as a data pointer: copied, not cast). */
#define SLOT_FUNCTION(kind, slot)                                                              \
    static kind slot##_of(PyTypeObject *t) {                                                   \
        void *p = PyType_GetSlot(t, slot);                                                     \
        kind f;                                                                                \
        memcpy(&f, &p, sizeof f);                                                              \
        return f;                                                                              \
    }
SLOT_FUNCTION(getattrofunc, Py_tp_getattro)
SLOT_FUNCTION(setattrofunc, Py_tp_setattro)
SLOT_FUNCTION(descrgetfunc, Py_tp_descr_get)
SLOT_FUNCTION(descrsetfunc, Py_tp_descr_set)

static PyObject *DUNDER; /* "__" */

int compiled_attr_init(compiled_attr *a, PyObject *first, PyObject *name) {
    if (DUNDER == NULL && (DUNDER = PyUnicode_InternFromString("__")) == NULL)
        return -1;
    a->type = first != NULL ? Py_TYPE(first) : NULL;
    a->name = name;
    a->descr = NULL;
    a->get = NULL;
    a->set = NULL;
    if (a->type == NULL || Py_tp_getattro_of(a->type) != PyObject_GenericGetAttr ||
        Py_tp_setattro_of(a->type) != PyObject_GenericSetAttr)
        return 0;
    Py_ssize_t dunder = PyUnicode_Tailmatch(name, DUNDER, 0, 2, -1); /* -1: not a str */
    if (dunder != 0) /* a name the metatype may own, read the usual way; or the error */
        return dunder < 0 ? -1 : 0;
    /* The type's attribute: a slot's member descriptor found in its MRO is given back as it
     * is (its get with no object), the one an instance's read or write would call. */
    PyObject *descr = PyObject_GetAttr((PyObject *)a->type, name);
    if (descr == NULL) { /* not the type's: read it the usual way */
        if (PyErr_ExceptionMatches(PyExc_AttributeError))
            PyErr_Clear();
        return PyErr_Occurred() ? -1 : 0;
    }
    descrgetfunc get = Py_tp_descr_get_of(Py_TYPE(descr));
    descrsetfunc set = Py_tp_descr_set_of(Py_TYPE(descr));
    if (Py_TYPE(descr) != &PyMemberDescr_Type || get == NULL || set == NULL) { /* not a slot */
        Py_DECREF(descr);
        return 0;
    }
    a->descr = descr;
    a->get = get;
    a->set = set;
    return 0;
}

PyObject *compiled_attr_get(compiled_attr *a, PyObject *obj) {
    if (a->get != NULL && Py_TYPE(obj) == a->type)
        return a->get(a->descr, obj, (PyObject *)a->type);
    return PyObject_GetAttr(obj, a->name);
}

int compiled_attr_set(compiled_attr *a, PyObject *obj, PyObject *value) {
    if (a->set != NULL && Py_TYPE(obj) == a->type)
        return a->set(a->descr, obj, value);
    return PyObject_SetAttr(obj, a->name, value);
}

void compiled_attr_clear(compiled_attr *a) { Py_CLEAR(a->descr); }

PyObject **compiled_hold(PyObject *list, Py_ssize_t *n) {
    Py_ssize_t size = PyList_Size(list);
    if (size < 0)
        return NULL;
    PyObject **items = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(PyObject *));
    if (items == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < size; i++) { /* in range, nothing run between: not NULL */
        items[i] = PyList_GetItem(list, i);
        Py_INCREF(items[i]);
    }
    *n = size;
    return items;
}

void compiled_release(PyObject **items, Py_ssize_t n) {
    if (items == NULL)
        return;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(items[i]);
    PyMem_Free(items);
}

static PyMethodDef methods[] = {
    {"line_scores", compiled_line_scores, METH_VARARGS,
     "line_scores(chunks, numbers, weights[, vocab]) -> per chunk, per line, the summed weights"},
    {"cached_line_scores", compiled_cached_line_scores, METH_VARARGS,
     "cached_line_scores(items, cands, numbers, weights, vocab) -> the candidates scored"},
    {"best_window", compiled_best_window, METH_VARARGS,
     "best_window(lines, scores, budget) -> (first, last): snippets.best_window"},
    {"snippet", (PyCFunction)(void (*)(void))compiled_snippet, METH_FASTCALL,
     "snippet(text, start, end, scores, budget, text_lines, whole_lines, cls) -> make_snippet"},
    {"take_spans", compiled_take_spans, METH_VARARGS,
     "take_spans(vectors, spans, out) -> rows: the spans' rows of vectors, one after another"},
    {"span_best", compiled_span_best, METH_VARARGS,
     "span_best(sims, spans, wids, slots) -> (best, sims): window_sims.py's best windows"},
    {"bm25_top", compiled_bm25_top, METH_VARARGS,
     "bm25_top(terms, norm, keep, chunk_id, limit) -> [(chunk id, score)]: bm25.ranked_all"},
    {"known_top", compiled_known_top, METH_VARARGS,
     "known_top(cands, vector, hybrid, idf_total, weights, keep) -> fusion._known_top, or None"},
    {"hit_dicts", compiled_hit_dicts, METH_VARARGS,
     "hit_dicts(hits, hit_type) -> [hit.to_dict() for hit in hits], or None"},
    {"hit_rows", compiled_hit_rows, METH_VARARGS,
     "hit_rows(hits) -> protocol.hit_rows(hits) for maps with str keys, or None"},
    {"hit_rows_of", compiled_hit_rows_of, METH_VARARGS,
     "hit_rows_of(hits, hit_type) -> hit_rows(hit_dicts(hits, hit_type)) with no maps, or None"},
    {"pack_frame", compiled_pack_frame, METH_O,
     "pack_frame(obj) -> protocol's header + msgpack's bytes of obj (rpc/server._pack), or None"},
    {"stat_many", compiled_stat_many, METH_VARARGS,
     "stat_many(paths) -> [(mtime_ns, size) or None]: freshness.py_stat_many, lock held"},
    {"fs_type", compiled_fs_type, METH_VARARGS,
     "fs_type(path) -> statfs's type (Linux: int, macOS/FreeBSD: str) or None; lock released"},
    {"watch_open", compiled_watch_open, METH_NOARGS,
     "watch_open() -> a non-blocking inotify fd (Linux; OSError elsewhere)"},
    {"watch_add", compiled_watch_add, METH_VARARGS,
     "watch_add(fd, path, mask, file) -> wd; -1 nothing there; -2 a link (file) or no folder"},
    {"watch_remove", compiled_watch_remove, METH_VARARGS, "watch_remove(fd, wd) -> None"},
    {"watch_ready", compiled_watch_ready, METH_VARARGS,
     "watch_ready(fd, mounts) -> 1: events queued | 2: the mount table changed; 0: neither"},
    {"watch_read", compiled_watch_read, METH_VARARGS,
     "watch_read(fd) -> the queued events' watch descriptors (-1: overflow), queue emptied"},
    {"make_candidates", compiled_make_candidates, METH_VARARGS,
     "make_candidates(cls, names, ids, found, bm25, tail) -> load_candidates' list, or None"},
    {"keyword_hits", (PyCFunction)(void (*)(void))compiled_keyword_hits, METH_FASTCALL,
     "keyword_hits(ids, found, uses, bm25, sources, lines, fusing, keep, show, dating) -> hits, "
     "or None"},
    {"day_chunks", compiled_day_chunks, METH_VARARGS,
     "day_chunks(day, alive, source, chunk_id, used, numbers, codes, limit) -> ids, ascending"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_compiled", "The index's compiled part (_compiled.h).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__compiled(void) { return PyModule_Create(&module); }
