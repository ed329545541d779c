/* The BM25 top of an OR query with every posting scored: keyword/mirror.py's ``top`` below
 * PRUNE_FROM chunks, which in Python is bm25.scored_all and then bm25.ranked (kept as the
 * fallback, and compared with this by the tests). The same doubles: per chunk, the terms
 * added in query order from 0.0, each term's share fts5_aux.c's
 * idf * ((f * (k1 + 1)) / (f + norm)) computed as numpy computes it; the same top: score
 * descending, ties by chunk id ascending. */

#include "_compiled.h"

#include <stdint.h>

#define K1 1.2 /* bm25.K1 */

typedef struct {
    double score;
    int64_t id;
} Hit;

/* a ranks after b: a lower score, or the same score and a higher id */
static int after(const Hit *a, const Hit *b) {
    return a->score < b->score || (a->score == b->score && a->id > b->id);
}

/* A heap whose first element ranks last of those kept: sift element i down. */
static void sift_down(Hit *heap, Py_ssize_t n, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t worst = i, l = 2 * i + 1, r = l + 1;
        if (l < n && after(&heap[l], &heap[worst]))
            worst = l;
        if (r < n && after(&heap[r], &heap[worst]))
            worst = r;
        if (worst == i)
            return;
        Hit t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

static void sift_up(Hit *heap, Py_ssize_t i) {
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!after(&heap[i], &heap[parent]))
            return;
        Hit t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

/* One term (a bm25.Term: slots, freq2, dense, top_f2, idf; or those and a count: the
 * first ``count`` postings of slots and freq2, as bm25.term_of slices them) added into
 * ``full``. */
static int add_term(PyObject *term, const double *norm, double *full, Py_ssize_t used) {
    PyObject *slots_obj = compiled_item(term, 0);
    PyObject *freq_obj = slots_obj ? compiled_item(term, 1) : NULL;
    PyObject *dense_obj = freq_obj ? compiled_item(term, 2) : NULL;
    PyObject *idf_obj = dense_obj ? compiled_item(term, 4) : NULL;
    Py_ssize_t count = -1; /* -1: every posting of the buffers */
    Py_buffer sv, fv, dv;
    int have_s = 0, have_f = 0, have_d = 0, ok = -1;
    if (idf_obj == NULL)
        goto done;
    Py_ssize_t items = PySequence_Size(term);
    if (items < 0)
        goto done;
    if (items > 5) {
        PyObject *count_obj = compiled_item(term, 5);
        count = count_obj ? PyLong_AsSsize_t(count_obj) : -1;
        Py_XDECREF(count_obj);
        if (count < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a negative count of postings");
            goto done;
        }
    }
    const double idf = PyFloat_AsDouble(idf_obj);
    if (idf == -1.0 && PyErr_Occurred())
        goto done;
    const double k1p1 = K1 + 1.0;
    if (dense_obj != Py_None) { /* freq2 by slot; 0: not in that chunk, adds 0.0: skipped */
        if (compiled_buffer(dense_obj, &dv, 1, "B") < 0)
            goto done;
        have_d = 1;
        const uint8_t *dense = dv.buf;
        Py_ssize_t m = dv.len < used ? dv.len : used;
        for (Py_ssize_t s = 0; s < m; s++) {
            if (dense[s] == 0)
                continue;
            double f = dense[s] * 0.5;
            double num = f * k1p1;
            double den = f + norm[s];
            num = num / den;
            num = num * idf;
            full[s] += num;
        }
        ok = 0;
        goto done;
    }
    if (compiled_buffer(slots_obj, &sv, 4, "I") < 0)
        goto done;
    have_s = 1;
    if (compiled_buffer(freq_obj, &fv, 2, "H") < 0)
        goto done;
    have_f = 1;
    Py_ssize_t n = sv.len / 4, n_freq = fv.len / 2;
    if (count >= 0) { /* slots[:count] and freq2[:count], as slicing clips them */
        n = count < n ? count : n;
        n_freq = count < n_freq ? count : n_freq;
    }
    if (n_freq != n) {
        PyErr_SetString(PyExc_ValueError, "slots and freq2 differ in length");
        goto done;
    }
    const uint32_t *slots = sv.buf;
    const uint16_t *freq2 = fv.buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if ((Py_ssize_t)slots[k] >= used) {
            PyErr_SetString(PyExc_IndexError, "a posting's slot is past the chunks scored");
            goto done;
        }
        double f = freq2[k] * 0.5;
        full[slots[k]] += idf * ((f * k1p1) / (f + norm[slots[k]]));
    }
    ok = 0;
done:
    if (have_d)
        PyBuffer_Release(&dv);
    if (have_f)
        PyBuffer_Release(&fv);
    if (have_s)
        PyBuffer_Release(&sv);
    Py_XDECREF(idf_obj);
    Py_XDECREF(dense_obj);
    Py_XDECREF(freq_obj);
    Py_XDECREF(slots_obj);
    return ok;
}

/* The kept chunks (``keep``) that hold any term, their top ``limit``: a heap of the best,
 * then sorted in place (the last-ranked first out, to the end). */
static PyObject *ranked(const double *full, const uint8_t *keep, const int64_t *ids,
                        Py_ssize_t used, Py_ssize_t limit) {
    Py_ssize_t cap = limit < used ? limit : used, n = 0;
    Hit *heap = PyMem_Malloc((size_t)(cap ? cap : 1) * sizeof(Hit));
    if (heap == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t s = 0; s < used; s++) {
        if (!(full[s] > 0.0) || !keep[s]) /* every term adds > 0: IDF is floored */
            continue;
        Hit h = {full[s], ids[s]};
        if (n < cap) {
            heap[n] = h;
            sift_up(heap, n++);
        } else if (after(&heap[0], &h)) {
            heap[0] = h;
            sift_down(heap, n, 0);
        }
    }
    for (Py_ssize_t k = n - 1; k > 0; k--) {
        Hit t = heap[0];
        heap[0] = heap[k];
        heap[k] = t;
        sift_down(heap, k, 0);
    }
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *pair = PyTuple_New(2);
        PyObject *id = pair ? PyLong_FromLongLong(heap[i].id) : NULL;
        PyObject *score = id ? PyFloat_FromDouble(heap[i].score) : NULL;
        if (score == NULL) {
            Py_XDECREF(id);
            Py_XDECREF(pair);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SetItem(pair, 0, id); /* steals id */
        PyTuple_SetItem(pair, 1, score);
        PyList_SetItem(out, i, pair); /* steals pair */
    }
    PyMem_Free(heap);
    return out;
}

/* bm25_top(terms, norm, keep, chunk_id, limit) -> [(chunk id, score)]: every chunk below
 * len(keep) scored, the top ``limit`` of those kept (score descending, ties by id). */
PyObject *compiled_bm25_top(PyObject *self, PyObject *args) {
    PyObject *terms, *norm_obj, *keep_obj, *ids_obj;
    Py_ssize_t limit;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOn", &terms, &norm_obj, &keep_obj, &ids_obj, &limit))
        return NULL;
    Py_ssize_t n_terms = PySequence_Size(terms);
    if (n_terms < 0)
        return NULL;
    Py_buffer nv, kv, iv;
    int have_n = 0, have_k = 0, have_i = 0;
    double *full = NULL;
    PyObject *out = NULL;
    if (compiled_buffer(norm_obj, &nv, 8, "d") < 0)
        goto done;
    have_n = 1;
    if (compiled_buffer(keep_obj, &kv, 1, "?") < 0)
        goto done;
    have_k = 1;
    if (compiled_buffer(ids_obj, &iv, 8, "lq") < 0)
        goto done;
    have_i = 1;
    Py_ssize_t used = kv.len;
    if (nv.len / 8 < used || iv.len / 8 < used) {
        PyErr_SetString(PyExc_ValueError, "norm or chunk_id shorter than keep");
        goto done;
    }
    if (limit <= 0 || used == 0) {
        out = PyList_New(0);
        goto done;
    }
    full = PyMem_Calloc((size_t)used, sizeof(double));
    if (full == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term = compiled_item(terms, t);
        int ok = term ? add_term(term, nv.buf, full, used) : -1;
        Py_XDECREF(term);
        if (ok < 0)
            goto done;
    }
    out = ranked(full, kv.buf, iv.buf, used, limit);
done:
    PyMem_Free(full);
    if (have_i)
        PyBuffer_Release(&iv);
    if (have_k)
        PyBuffer_Release(&kv);
    if (have_n)
        PyBuffer_Release(&nv);
    return out;
}
