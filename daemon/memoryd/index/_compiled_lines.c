/* Compiled line scores and snippet windows: snippets.py's line_scores and best_window,
 * the same doubles from the same operations in the same order (snippets.py keeps the
 * Python versions, used when this module is absent, and the tests compare the two). */

#include "_compiled.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TAIL_WEIGHT 0.5 /* snippets.TAIL_WEIGHT */
#define BEST_SHARE 0.9  /* snippets.BEST_SHARE */

/* One chunk's line scores (a ChunkLines: its n_lines and its entries, the stems then the
 * lines as native int32) as doubles: ``acc`` when its ``acc_len`` holds them, else a new
 * PyMem array (the caller frees it); *n_lines_out set; NULL with an exception set. The
 * entries are by stem, then line: each query stem's run is found by a binary search past
 * the previous one, and its lines get its weight. A line's weights are so added in the
 * order of its stems, ascending, as a pass over every entry line by line would add them. */
double *compiled_chunk_doubles(PyObject *chunk, const int32_t *numbers, const double *weights,
                               Py_ssize_t q, double *acc, Py_ssize_t acc_len,
                               Py_ssize_t *n_lines_out) {
    PyObject *n_obj = compiled_item(chunk, 2);
    PyObject *entries = n_obj ? compiled_item(chunk, 4) : NULL;
    double *scores = NULL;
    if (entries == NULL)
        goto done;
    Py_ssize_t n_lines = PyLong_AsSsize_t(n_obj);
    if (n_lines < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "negative line count");
        goto done;
    }
    if (!PyBytes_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "a chunk's entries must be bytes");
        goto done;
    }
    Py_ssize_t size = PyBytes_Size(entries);
    if (size % (2 * (Py_ssize_t)sizeof(int32_t)) != 0) {
        PyErr_SetString(PyExc_ValueError, "a chunk's entries are not (stem, line) pairs");
        goto done;
    }
    Py_ssize_t n = size / (2 * (Py_ssize_t)sizeof(int32_t));
    scores = n_lines <= acc_len ? acc : PyMem_Calloc((size_t)n_lines, sizeof(double));
    if (scores == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (scores == acc)
        memset(acc, 0, (size_t)n_lines * sizeof(double));
    /* bytes are allocated aligned for any type; PyBytes_AsString points past the header */
    const int32_t *st = (const int32_t *)(void *)PyBytes_AsString(entries), *ln = st + n;
    Py_ssize_t k = 0; /* the entries before k have stems below the query stem's */
    for (Py_ssize_t i = 0; i < q; i++) {
        Py_ssize_t hi = n;
        while (k < hi) {
            Py_ssize_t mid = k + (hi - k) / 2;
            if (st[mid] < numbers[i])
                k = mid + 1;
            else
                hi = mid;
        }
        for (; k < n && st[k] == numbers[i]; k++) {
            if (ln[k] < 0 || ln[k] >= n_lines) {
                PyErr_SetString(PyExc_ValueError, "a stem's line is outside its chunk");
                if (scores != acc)
                    PyMem_Free(scores);
                scores = NULL;
                goto done;
            }
            scores[ln[k]] += weights[i];
        }
    }
    *n_lines_out = n_lines;
done:
    Py_XDECREF(entries);
    Py_XDECREF(n_obj);
    return scores;
}

PyObject *compiled_float_list(const double *scores, Py_ssize_t n, PyObject *zero) {
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *f = scores[i] == 0.0 && !signbit(scores[i]) ? zero : NULL;
        if (f != NULL)
            Py_INCREF(f); /* most lines: one 0.0 shared */
        else
            f = PyFloat_FromDouble(scores[i]);
        if (f == NULL)
            Py_CLEAR(out);
        else
            PyList_SetItem(out, i, f); /* steals f */
    }
    return out;
}

/* One chunk scored into a new list of floats (``zero`` for the lines that hold no query
 * stem): compiled_chunk_doubles, then compiled_float_list. */
static PyObject *chunk_scores(PyObject *chunk, const int32_t *numbers, const double *weights,
                              Py_ssize_t q, PyObject *zero, double *acc, Py_ssize_t acc_len) {
    Py_ssize_t n_lines = 0;
    double *scores = compiled_chunk_doubles(chunk, numbers, weights, q, acc, acc_len, &n_lines);
    if (scores == NULL)
        return NULL;
    PyObject *out = compiled_float_list(scores, n_lines, zero);
    if (scores != acc)
        PyMem_Free(scores);
    return out;
}

/* The query's stem numbers (ascending int32) and weights, read into new arrays: 0, or -1
 * with an exception set. */
int compiled_read_query(PyObject *numbers_obj, PyObject *weights_obj, Py_ssize_t *q_out,
                      int32_t **numbers_out, double **weights_out) {
    Py_ssize_t q = PySequence_Size(numbers_obj);
    if (q < 0)
        return -1;
    if (PySequence_Size(weights_obj) != q) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "numbers and weights differ in length");
        return -1;
    }
    int32_t *numbers = PyMem_Malloc((size_t)(q ? q : 1) * sizeof(int32_t));
    double *weights = PyMem_Malloc((size_t)(q ? q : 1) * sizeof(double));
    if (numbers == NULL || weights == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < q; i++) {
        PyObject *a = compiled_item(numbers_obj, i);
        PyObject *b = a ? compiled_item(weights_obj, i) : NULL;
        long v = a ? PyLong_AsLong(a) : -1;
        double w = b ? PyFloat_AsDouble(b) : -1.0;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (PyErr_Occurred())
            goto fail;
        if (v < INT32_MIN || v > INT32_MAX || (i > 0 && v <= numbers[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "numbers must be ascending int32");
            goto fail;
        }
        numbers[i] = (int32_t)v;
        weights[i] = w;
    }
    *q_out = q;
    *numbers_out = numbers;
    *weights_out = weights;
    return 0;
fail:
    PyMem_Free(numbers);
    PyMem_Free(weights);
    return -1;
}

/* line_scores(chunks, numbers, weights[, vocab]): per chunk (a ChunkLines, its entries by
 * stem), per line, the sum of ``weights[i]`` over its entries whose stem is ``numbers[i]``
 * (ascending), added from 0.0 in the order of the line's stems. With ``vocab``: None when
 * a chunk's numbering is not that one (the caller scores such chunks one by one). */
PyObject *compiled_line_scores(PyObject *self, PyObject *args) {
    PyObject *chunks, *numbers_obj, *weights_obj, *vocab = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO|O", &chunks, &numbers_obj, &weights_obj, &vocab))
        return NULL;
    Py_ssize_t n_chunks = PySequence_Size(chunks), q = 0;
    int32_t *numbers = NULL;
    double *weights = NULL;
    if (n_chunks < 0 || compiled_read_query(numbers_obj, weights_obj, &q, &numbers, &weights) < 0)
        return NULL;
    double acc[256];
    PyObject *out = NULL, *zero = PyFloat_FromDouble(0.0);
    if (zero == NULL)
        goto done;
    out = PyList_New(n_chunks);
    if (out == NULL)
        goto done;
    for (Py_ssize_t c = 0; c < n_chunks; c++) {
        PyObject *chunk = compiled_item(chunks, c);
        PyObject *own = chunk && vocab ? compiled_item(chunk, 3) : NULL;
        PyObject *scores = NULL;
        if (chunk != NULL && vocab != NULL && own != vocab) {
            Py_XDECREF(own);
            Py_DECREF(chunk);
            if (PyErr_Occurred()) {
                Py_CLEAR(out);
            } else {
                Py_DECREF(out);
                out = Py_None; /* another numbering */
                Py_INCREF(out);
            }
            break;
        }
        Py_XDECREF(own);
        scores = chunk ? chunk_scores(chunk, numbers, weights, q, zero, acc, 256) : NULL;
        Py_XDECREF(chunk);
        if (scores == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SetItem(out, c, scores);
    }
done:
    Py_XDECREF(zero);
    PyMem_Free(numbers);
    PyMem_Free(weights);
    return out;
}

static PyObject *ATTR_ID, *ATTR_TEXT, *ATTR_LINES;

static int intern_names(void) {
    if (ATTR_LINES != NULL)
        return 0;
    ATTR_ID = PyUnicode_InternFromString("id");
    ATTR_TEXT = ATTR_ID ? PyUnicode_InternFromString("text") : NULL;
    ATTR_LINES = ATTR_TEXT ? PyUnicode_InternFromString("lines") : NULL;
    return ATTR_LINES ? 0 : -1;
}

int compiled_lru_read(PyObject *spec, compiled_lru *lru) {
    if (!PyTuple_Check(spec) || PyTuple_Size(spec) != 3 ||
        !PyDict_Check(PyTuple_GetItem(spec, 0)) || !PyDict_CheckExact(PyTuple_GetItem(spec, 1))) {
        PyErr_SetString(PyExc_TypeError, "the cached lines must be (items, used_at, tick)");
        return -1;
    }
    lru->items = PyTuple_GetItem(spec, 0);
    lru->used_at = PyTuple_GetItem(spec, 1);
    lru->tick = PyLong_AsLongLong(PyTuple_GetItem(spec, 2));
    return lru->tick == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The cached lines of a candidate (LineStems.peek: its id's entry, for this text), the
 * entry used (``used_at[id]``, the LRU's next tick); a new reference, or NULL with no
 * error when none is cached. */
PyObject *compiled_peek(compiled_lru *lru, PyObject *id, PyObject *text) {
    PyObject *found = PyDict_GetItemWithError(lru->items, id); /* borrowed */
    if (found == NULL || !PyTuple_Check(found) || PyTuple_Size(found) != 2)
        return NULL;
    Py_hash_t h = PyObject_Hash(text);
    if (h == -1)
        return NULL;
    Py_ssize_t kept = PyLong_AsSsize_t(PyTuple_GetItem(found, 0));
    if (kept == -1 && PyErr_Occurred())
        return NULL;
    if (kept != h)
        return NULL;
    PyObject *lines = PyTuple_GetItem(found, 1);
    Py_INCREF(lines); /* held across the use's store */
    PyObject *tick = PyLong_FromLongLong(lru->tick++);
    int r = tick ? PyDict_SetItem(lru->used_at, id, tick) : -1;
    Py_XDECREF(tick);
    if (r < 0) {
        Py_DECREF(lines);
        return NULL;
    }
    return lines;
}

/* focus.refocus(text, scores, True) of a new list of plain floats: the lines whose
 * ``timed`` item is true (timed_of(text), the lines naming a time) times ``boost`` when they
 * score, the others as they are, as many as both have; ``scores`` itself (a new reference)
 * when no line scores or none names a time. */
static PyObject *refocused(PyObject *scores, PyObject *text, PyObject *timed_of, double boost) {
    Py_ssize_t n = PyList_Size(scores), any = 0;
    for (Py_ssize_t i = 0; i < n && !any; i++)
        any = PyFloat_AsDouble(PyList_GetItem(scores, i)) != 0.0;
    PyObject *timed = any ? PyObject_CallFunctionObjArgs(timed_of, text, NULL) : NULL;
    if (!any) {
        Py_INCREF(scores);
        return scores;
    }
    if (timed == NULL)
        return NULL;
    Py_ssize_t m = PySequence_Size(timed), named = 0;
    int *marks = m > 0 ? PyMem_Calloc((size_t)m, sizeof(int)) : NULL;
    PyObject *out = NULL;
    if (m < 0 || (m > 0 && marks == NULL)) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *t = compiled_item(timed, i);
        marks[i] = t ? PyObject_IsTrue(t) : -1;
        Py_XDECREF(t);
        if (marks[i] < 0)
            goto done;
        named += marks[i];
    }
    if (!named) {
        out = scores;
        Py_INCREF(out);
        goto done;
    }
    Py_ssize_t k = n < m ? n : m; /* zip(scores, timed) */
    out = PyList_New(k);
    for (Py_ssize_t i = 0; out != NULL && i < k; i++) {
        PyObject *x = PyList_GetItem(scores, i);
        double s = PyFloat_AsDouble(x);
        PyObject *y = s != 0.0 && marks[i] ? PyFloat_FromDouble(s * boost) : x;
        if (y == x)
            Py_INCREF(y);
        if (y == NULL)
            Py_CLEAR(out);
        else
            PyList_SetItem(out, i, y);
    }
done:
    PyMem_Free(marks);
    Py_DECREF(timed);
    return out;
}

/* cached_line_scores(items, cands, numbers, weights, vocab[, timed_of, boost]):
 * LineStems.peek_many of each candidate's (id, text) in ``items`` (the LRU, under its
 * lock), then line_scores of those found, each set as its candidate's ``lines`` (with
 * ``timed_of``: refocused, as a question asking when has them); the candidates so scored,
 * in order. None, with no line set, when a found chunk's numbering is not ``vocab`` or
 * ``cands`` is not a list (the caller does it in Python). */
PyObject *compiled_cached_line_scores(PyObject *self, PyObject *args) {
    PyObject *lru_spec, *cands, *numbers_obj, *weights_obj, *vocab, *timed_of = Py_None;
    double boost = 1.0;
    compiled_lru lru;
    (void)self;
    if (intern_names() < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "OOOOO|Od", &lru_spec, &cands, &numbers_obj, &weights_obj,
                          &vocab, &timed_of, &boost) ||
        compiled_lru_read(lru_spec, &lru) < 0)
        return NULL;
    if (!PyList_CheckExact(cands))
        Py_RETURN_NONE;
    Py_ssize_t n = 0, q = 0, known = 0;
    int32_t *numbers = NULL;
    double *weights = NULL;
    if (compiled_read_query(numbers_obj, weights_obj, &q, &numbers, &weights) < 0)
        return NULL;
    double acc[256];
    /* The candidates as they are now, held: another type's attribute read the usual way
     * may run Python (a property), which may change the list */
    PyObject **held = compiled_hold(cands, &n);
    PyObject *zero = held ? PyFloat_FromDouble(0.0) : NULL, *out = NULL;
    PyObject *scored = zero ? PyList_New(0) : NULL, *found = zero ? PyList_New(0) : NULL;
    int other_numbering = 0;
    compiled_attr id_attr = {0}, text_attr = {0}, lines_attr = {0};
    if (scored == NULL || found == NULL)
        goto done;
    PyObject *first = n > 0 ? held[0] : NULL;
    if (compiled_attr_init(&id_attr, first, ATTR_ID) < 0 ||
        compiled_attr_init(&text_attr, first, ATTR_TEXT) < 0 ||
        compiled_attr_init(&lines_attr, first, ATTR_LINES) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n && !other_numbering; i++) {
        PyObject *c = held[i];
        PyObject *id = compiled_attr_get(&id_attr, c);
        PyObject *text = id ? compiled_attr_get(&text_attr, c) : NULL;
        PyObject *chunk = text ? compiled_peek(&lru, id, text) : NULL;
        Py_XDECREF(id);
        Py_XDECREF(text);
        if (PyErr_Occurred())
            goto done;
        if (chunk == NULL)
            continue;
        PyObject *own = compiled_item(chunk, 3);
        if (own == NULL) {
            Py_DECREF(chunk);
            goto done;
        }
        other_numbering = own != vocab;
        Py_DECREF(own);
        PyObject *scores = other_numbering ? NULL
                                           : chunk_scores(chunk, numbers, weights, q, zero, acc, 256);
        Py_DECREF(chunk);
        if (!other_numbering && scores == NULL)
            goto done;
        if (scores != NULL) {
            int bad = PyList_Append(scored, scores) < 0 || PyList_Append(found, c) < 0;
            Py_DECREF(scores);
            if (bad)
                goto done;
            known++;
        }
    }
    if (other_numbering) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    for (Py_ssize_t k = 0; k < known; k++) {
        PyObject *c = PyList_GetItem(found, k), *lines = PyList_GetItem(scored, k);
        PyObject *text = timed_of != Py_None ? compiled_attr_get(&text_attr, c) : NULL;
        PyObject *shown = text != NULL ? refocused(lines, text, timed_of, boost) : NULL;
        Py_XDECREF(text);
        if (timed_of != Py_None && shown == NULL)
            goto done;
        int r = compiled_attr_set(&lines_attr, c, shown != NULL ? shown : lines);
        Py_XDECREF(shown);
        if (r < 0)
            goto done;
    }
    out = found;
    Py_INCREF(out);
done:
    compiled_release(held, n);
    Py_XDECREF(zero);
    Py_XDECREF(scored);
    Py_XDECREF(found);
    compiled_attr_clear(&id_attr);
    compiled_attr_clear(&text_attr);
    compiled_attr_clear(&lines_attr);
    PyMem_Free(numbers);
    PyMem_Free(weights);
    return out;
}

/* best_window's loop, statement for statement: ``sizes`` (n + 1 room), ``scores`` (m of
 * them, m >= n), ``strong_from`` (n + 1 room, scratch). */
static void window_core(const Py_ssize_t *sizes, Py_ssize_t n, const double *scores,
                        Py_ssize_t m, Py_ssize_t budget, Py_ssize_t *strong_from,
                        Py_ssize_t *first_out, Py_ssize_t *last_out) {
    double top = 0.0; /* max(scores, default=0.0): the first, then any greater */
    for (Py_ssize_t k = 0; k < m; k++)
        if (k == 0 || scores[k] > top)
            top = scores[k];
    double floor = BEST_SHARE * top;
    strong_from[n] = n;
    for (Py_ssize_t k = n - 1; k >= 0; k--)
        strong_from[k] = scores[k] >= floor ? k : strong_from[k + 1];
    Py_ssize_t best_first = 0, best_last = 0;
    double best_score = -1.0;
    Py_ssize_t j = 0, size = 0;
    double total = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (j <= i) {
            j = i;
            size = 0;
            total = 0.0;
        }
        while (j < n && (j == i || size + sizes[j] <= budget)) {
            size += sizes[j];
            total += scores[j];
            j++;
        }
        double score = j < n ? total - TAIL_WEIGHT * scores[j - 1] : total;
        if (score > best_score && strong_from[i] < j) {
            best_score = score;
            best_first = i;
            best_last = j - 1;
        }
        size -= sizes[i];
        total -= scores[i];
    }
    *first_out = best_first;
    *last_out = best_last;
}

/* Each line's size plus one (its newline), into ``sizes``: 0, or -1 with an exception set. */
static int line_sizes(PyObject *lines, Py_ssize_t n, Py_ssize_t *sizes) {
    int tuple_lines = PyTuple_Check(lines);
    for (Py_ssize_t k = 0; k < n; k++) { /* a tuple's items borrowed (text_lines gives one) */
        PyObject *line = tuple_lines ? PyTuple_GetItem(lines, k) : compiled_item(lines, k);
        if (line == NULL)
            return -1;
        Py_ssize_t len = PyUnicode_Check(line) ? PyUnicode_GetLength(line) : PyObject_Size(line);
        if (!tuple_lines)
            Py_DECREF(line);
        if (len < 0)
            return -1;
        sizes[k] = len + 1;
    }
    return 0;
}

int compiled_window_doubles(PyObject *lines, const double *scores, Py_ssize_t m,
                            Py_ssize_t budget, Py_ssize_t *first_out, Py_ssize_t *last_out) {
    Py_ssize_t n = PySequence_Size(lines);
    if (n < 0)
        return -1;
    if (m < n) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    Py_ssize_t small_sizes[128], small_strong[129];
    int on_stack = n < 128;
    Py_ssize_t *sizes =
        on_stack ? small_sizes : PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *strong_from =
        on_stack ? small_strong : PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    int r = -1;
    if (sizes == NULL || strong_from == NULL)
        PyErr_NoMemory();
    else if (line_sizes(lines, n, sizes) == 0) {
        window_core(sizes, n, scores, m, budget, strong_from, first_out, last_out);
        r = 0;
    }
    if (!on_stack) {
        PyMem_Free(sizes);
        PyMem_Free(strong_from);
    }
    return r;
}



/* snippets.best_window of ``lines`` and ``scores``, statement for statement: 0 with *first
 * and *last set, or -1 with an exception set. */
static int window_of(PyObject *lines, PyObject *scores_obj, Py_ssize_t budget,
                     Py_ssize_t *first_out, Py_ssize_t *last_out) {
    Py_ssize_t m = PySequence_Size(scores_obj);
    if (m < 0)
        return -1;
    double small_scores[128];
    double *scores = m <= 128 ? small_scores : PyMem_Malloc((size_t)m * sizeof(double));
    if (scores == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int r = -1, list_scores = PyList_Check(scores_obj);
    for (Py_ssize_t k = 0; k < m; k++) { /* a list's items borrowed */
        PyObject *s = list_scores ? PyList_GetItem(scores_obj, k) : compiled_item(scores_obj, k);
        if (s == NULL)
            goto done;
        scores[k] = PyFloat_AsDouble(s);
        if (!list_scores)
            Py_DECREF(s);
        if (scores[k] == -1.0 && PyErr_Occurred())
            goto done;
    }
    r = compiled_window_doubles(lines, scores, m, budget, first_out, last_out);
done:
    if (scores != small_scores)
        PyMem_Free(scores);
    return r;
}


/* best_window(lines, scores, budget): snippets.best_window, statement for statement. */
PyObject *compiled_best_window(PyObject *self, PyObject *args) {
    PyObject *lines, *scores_obj;
    Py_ssize_t budget, first = 0, last = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOn", &lines, &scores_obj, &budget))
        return NULL;
    if (window_of(lines, scores_obj, budget, &first, &last) < 0)
        return NULL;
    return Py_BuildValue("(nn)", first, last);
}

/* A new instance of the tuple subclass ``type`` holding (body, first, last), as
 * tuple.__new__(type, (body, first, last)) makes it (a NamedTuple's own __new__ is a
 * Python call); NULL with an exception set. */
static PyObject *snippet_of(PyObject *type, PyObject *body, Py_ssize_t first, Py_ssize_t last) {
    allocfunc alloc = NULL;
    void *slot = PyType_GetSlot((PyTypeObject *)type, Py_tp_alloc);
    memcpy(&alloc, &slot, sizeof alloc);
    PyObject *a = PyLong_FromSsize_t(first);
    PyObject *b = a ? PyLong_FromSsize_t(last) : NULL;
    PyObject *out = b && alloc ? alloc((PyTypeObject *)type, 3) : NULL;
    if (out == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "snippet_type cannot be made");
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    Py_INCREF(body);
    PyTuple_SetItem(out, 0, body); /* each steals its reference */
    PyTuple_SetItem(out, 1, a);
    PyTuple_SetItem(out, 2, b);
    return out;
}

/* snippet(text, start_line, end_line, scores, budget, text_lines, whole_lines, snippet_type):
 * snippets.make_snippet for a window that fits the budget (whole_lines gives it), its calls
 * of text_lines and whole_lines (the caches) as it makes them, the Snippet made as
 * tuple.__new__ makes it; None, when whole_lines says the window is one line longer than
 * the budget (make_snippet cuts it around the query's words). METH_FASTCALL: ten a search,
 * and parsing an argument tuple cost a third of the rest. */
PyObject *compiled_snippet(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "snippet() takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *text = args[0], *scores = args[3], *text_lines = args[5], *whole_lines = args[6];
    PyObject *snippet_type = args[7];
    Py_ssize_t start_line = PyLong_AsSsize_t(args[1]), end_line = PyLong_AsSsize_t(args[2]);
    Py_ssize_t budget = PyLong_AsSsize_t(args[4]), first = 0, last = 0;
    if (PyErr_Occurred())
        return NULL;
    if (!PyType_Check(snippet_type) ||
        !PyType_IsSubtype((PyTypeObject *)snippet_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "snippet_type must be a tuple type");
        return NULL;
    }
    PyObject *lines = PyObject_CallFunctionObjArgs(text_lines, text, NULL), *out = NULL;
    if (lines == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Size(lines);
    int mapped = n == end_line - start_line + 1; /* else a fragment or a transcript chunk */
    PyObject *first_obj = NULL, *last_obj = NULL, *filled = NULL;
    if (n < 0 || window_of(lines, scores, budget, &first, &last) < 0)
        goto done;
    first_obj = PyLong_FromSsize_t(first);
    last_obj = first_obj ? PyLong_FromSsize_t(last) : NULL;
    filled = last_obj ? PyObject_CallFunctionObjArgs(whole_lines, text, first_obj, last_obj,
                                                     args[4], NULL)
                      : NULL;
    if (filled == NULL)
        goto done;
    if (filled == Py_None) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    PyObject *body = NULL;
    Py_ssize_t shown_last = 0;
    if (compiled_body_last(filled, &body, &shown_last) < 0)
        goto done;
    out = mapped ? snippet_of(snippet_type, body, start_line + first, start_line + shown_last)
                 : snippet_of(snippet_type, body, start_line, end_line);
done:
    Py_XDECREF(filled);
    Py_XDECREF(first_obj);
    Py_XDECREF(last_obj);
    Py_DECREF(lines);
    return out;
}
