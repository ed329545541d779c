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

/* One chunk (a ChunkLines: its n_lines and its entries, the stems then the lines as native
 * int32) scored into a new list of floats (``zero`` for the lines that hold no query
 * stem). The entries are by stem, then line: each
 * query stem's run is found by a binary search past the previous one, and its lines get
 * its weight. A line's weights are so added in the order of its stems, ascending, as a
 * pass over every entry line by line would add them. */
static PyObject *chunk_scores(PyObject *chunk, const int32_t *numbers, const double *weights,
                              Py_ssize_t q, PyObject *zero, double *acc, Py_ssize_t acc_len) {
    PyObject *n_obj = compiled_item(chunk, 2);
    PyObject *entries = n_obj ? compiled_item(chunk, 4) : NULL;
    PyObject *out = NULL;
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
    double *scores = n_lines <= acc_len ? acc : PyMem_Calloc((size_t)n_lines, sizeof(double));
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
                goto free_scores;
            }
            scores[ln[k]] += weights[i];
        }
    }
    out = PyList_New(n_lines);
    if (out == NULL)
        goto free_scores;
    for (Py_ssize_t i = 0; i < n_lines; i++) {
        PyObject *f = scores[i] == 0.0 && !signbit(scores[i]) ? zero : NULL;
        if (f != NULL)
            Py_INCREF(f); /* most lines: one 0.0 shared */
        else
            f = PyFloat_FromDouble(scores[i]);
        if (f == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SetItem(out, i, f); /* steals f */
    }
free_scores:
    if (scores != acc)
        PyMem_Free(scores);
done:
    Py_XDECREF(entries);
    Py_XDECREF(n_obj);
    return out;
}

/* line_scores(chunks, numbers, weights): per chunk (a ChunkLines, its entries by stem), per
 * line, the sum of ``weights[i]`` over its entries whose stem is ``numbers[i]``
 * (ascending), added from 0.0 in the order of the line's stems. */
PyObject *compiled_line_scores(PyObject *self, PyObject *args) {
    PyObject *chunks, *numbers_obj, *weights_obj;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &chunks, &numbers_obj, &weights_obj))
        return NULL;
    Py_ssize_t q = PySequence_Size(numbers_obj);
    Py_ssize_t n_chunks = PySequence_Size(chunks);
    if (q < 0 || n_chunks < 0)
        return NULL;
    if (PySequence_Size(weights_obj) != q) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "numbers and weights differ in length");
        return NULL;
    }
    int32_t *numbers = PyMem_Malloc((size_t)(q ? q : 1) * sizeof(int32_t));
    double *weights = PyMem_Malloc((size_t)(q ? q : 1) * sizeof(double));
    double acc[256];
    PyObject *out = NULL, *zero = PyFloat_FromDouble(0.0);
    if (zero == NULL)
        goto done;
    if (numbers == NULL || weights == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < q; i++) {
        PyObject *a = compiled_item(numbers_obj, i);
        PyObject *b = a ? compiled_item(weights_obj, i) : NULL;
        long v = a ? PyLong_AsLong(a) : -1;
        double w = b ? PyFloat_AsDouble(b) : -1.0;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (PyErr_Occurred())
            goto done;
        if (v < INT32_MIN || v > INT32_MAX || (i > 0 && v <= numbers[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "numbers must be ascending int32");
            goto done;
        }
        numbers[i] = (int32_t)v;
        weights[i] = w;
    }
    out = PyList_New(n_chunks);
    if (out == NULL)
        goto done;
    for (Py_ssize_t c = 0; c < n_chunks; c++) {
        PyObject *chunk = compiled_item(chunks, c);
        PyObject *scores = chunk ? chunk_scores(chunk, numbers, weights, q, zero, acc, 256) : NULL;
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

/* best_window(lines, scores, budget): snippets.best_window, statement for statement. */
PyObject *compiled_best_window(PyObject *self, PyObject *args) {
    PyObject *lines, *scores_obj;
    Py_ssize_t budget;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOn", &lines, &scores_obj, &budget))
        return NULL;
    Py_ssize_t n = PySequence_Size(lines);
    Py_ssize_t m = PySequence_Size(scores_obj);
    if (n < 0 || m < 0)
        return NULL;
    Py_ssize_t *sizes = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *strong_from = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    double *scores = PyMem_Malloc((size_t)(m + 1) * sizeof(double));
    PyObject *out = NULL;
    if (sizes == NULL || strong_from == NULL || scores == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *line = compiled_item(lines, k);
        if (line == NULL)
            goto done;
        Py_ssize_t len = PyUnicode_Check(line) ? PyUnicode_GetLength(line) : PyObject_Size(line);
        Py_DECREF(line);
        if (len < 0)
            goto done;
        sizes[k] = len + 1;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *s = compiled_item(scores_obj, k);
        if (s == NULL)
            goto done;
        scores[k] = PyFloat_AsDouble(s);
        Py_DECREF(s);
        if (scores[k] == -1.0 && PyErr_Occurred())
            goto done;
    }
    if (m < n) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        goto done;
    }
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
    out = Py_BuildValue("(nn)", best_first, best_last);
done:
    PyMem_Free(sizes);
    PyMem_Free(strong_from);
    PyMem_Free(scores);
    return out;
}
