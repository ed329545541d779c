/* A keyword search's hits from its candidates' rows and cached lines, in one pass: what
 * fusion.run_search's candidates (load_candidates, filters.accepted), their line scores
 * (_cached_line_scores), their fusion (fuse: known_top, or _weighted_top when some lines
 * are not cached) and shown.shown_hits give for a search with only a source filter and no
 * adjusting signal but the range a question names (a named day's date signal and that
 * range: _compiled_dates.c), with no candidate object made (a search's ~40 were made,
 * scored and freed for ten hits). The same doubles from the same operations in the same
 * order as those (-ffp-contract=off), the same top (ties by id, then by place), the same LRU
 * uses (each cached chunk used in the candidates' order), the same calls of ``timed_of``.
 * A chunk whose lines are not cached is left out when even l = 1 (its bound, as
 * _weighted_top's) cannot reach the keep-th best cached score: _weighted_top would stop
 * before it, fill none of its lines, and give this top. None, having made nothing, when
 * the Python path must do it: a chunk not cached that could reach the top (its tokenizing
 * is Python's), one cached in another numbering, a value not of the plain types those
 * take. The hits themselves are _compiled_hits.c's. */

#include "_compiled.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ROW_FIELDS 8 /* rows.Row */
#define ROW_SOURCE 1
#define ROW_DAY 2
#define ROW_TEXT 6

typedef struct {
    PyObject *id;     /* held */
    PyObject *row;    /* held */
    PyObject *bm25;   /* held: a float, or NULL for None */
    PyObject *chunk;  /* held: its cached ChunkLines */
    PyObject *timed;  /* held: timed_of(text), or NULL when not asked */
    long long key_id; /* the first tie-break */
    Py_ssize_t n;     /* its place among the candidates: the last */
    double s, t;
    double *lines;       /* its lines' scores, refocused: in Top's room, or its own */
    Py_ssize_t n_lines;  /* how many */
    int owned;           /* lines a PyMem array of its own (the room was full) */
    int unlined;         /* its lines not cached: ``s`` is its bound (l = 1) */
} Entry;

/* fuse's sort key (-score, id, n), ascending. */
static int by_key(const void *pa, const void *pb) {
    const Entry *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s > b->s ? -1 : 1;
    if (a->key_id != b->key_id)
        return a->key_id < b->key_id ? -1 : 1;
    return a->n < b->n ? -1 : (a->n > b->n);
}

typedef struct {
    int32_t *numbers;
    double *weights;
    Py_ssize_t q;
    PyObject *timed_of; /* None: the question does not ask when */
    double boost;
} Query;

#define MARK_ROOM 256 /* lines of a chunk marked on the stack (past it: a PyMem array) */

/* An entry's lines as focus.refocus gives them (``scores`` refocused in place, *n_out of
 * them: zip's length when a line names a time), reading ``e->timed`` (asked of timed_of
 * here the first time, as cached_line_scores asks it: only when a line scores): 0, or -1
 * with an exception set. */
static int refocus_doubles(Entry *e, const Query *qy, double *scores, Py_ssize_t n,
                           Py_ssize_t *n_out) {
    *n_out = n;
    if (qy->timed_of == Py_None)
        return 0;
    if (e->timed == NULL) {
        int any = 0;
        for (Py_ssize_t i = 0; i < n && !any; i++)
            any = scores[i] != 0.0;
        if (!any)
            return 0;
        e->timed = PyObject_CallFunctionObjArgs(qy->timed_of, PyTuple_GetItem(e->row, ROW_TEXT),
                                                NULL);
        if (e->timed == NULL)
            return -1;
    }
    Py_ssize_t m = PySequence_Size(e->timed), named = 0;
    if (m < 0)
        return -1;
    int mark_room[MARK_ROOM]; /* a chunk's lines' marks while they fit (each set below) */
    int *marks = m <= MARK_ROOM ? mark_room : PyMem_Calloc((size_t)m, sizeof(int));
    if (marks == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int bools = PyTuple_CheckExact(e->timed); /* timed_lines': a tuple of True/False */
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *t = bools ? PyTuple_GetItem(e->timed, i) : NULL;
        if (t == Py_True || t == Py_False) {
            marks[i] = t == Py_True; /* what PyObject_IsTrue says of them */
        } else {
            t = compiled_item(e->timed, i);
            marks[i] = t ? PyObject_IsTrue(t) : -1;
            Py_XDECREF(t);
        }
        if (marks[i] < 0) {
            if (marks != mark_room)
                PyMem_Free(marks);
            return -1;
        }
        named += marks[i];
    }
    if (named) {
        Py_ssize_t k = n < m ? n : m; /* zip(scores, timed) */
        for (Py_ssize_t i = 0; i < k; i++)
            if (scores[i] != 0.0 && marks[i])
                scores[i] = scores[i] * qy->boost;
        *n_out = k;
    }
    if (marks != mark_room)
        PyMem_Free(marks);
    return 0;
}

/* An entry's line scores, refocused: ``acc`` or a new PyMem array (see
 * compiled_chunk_doubles), *n_out of them; NULL with an exception set. */
static double *entry_lines(Entry *e, const Query *qy, double *acc, Py_ssize_t acc_len,
                           Py_ssize_t *n_out) {
    Py_ssize_t n = 0;
    double *scores =
        compiled_chunk_doubles(e->chunk, qy->numbers, qy->weights, qy->q, acc, acc_len, &n);
    if (scores != NULL && refocus_doubles(e, qy, scores, n, n_out) < 0) {
        if (scores != acc)
            PyMem_Free(scores);
        return NULL;
    }
    return scores;
}

/* The held entries' references given back. */
static void entries_clear(Entry *entries, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(entries[i].id);
        Py_XDECREF(entries[i].row);
        Py_XDECREF(entries[i].bm25);
        Py_XDECREF(entries[i].chunk);
        Py_XDECREF(entries[i].timed);
        if (entries[i].owned)
            PyMem_Free(entries[i].lines);
    }
}

/* The accepted candidates' entries (found rows whose source is among ``sources``), in
 * order, and the best positive bm25: the count, -1 with an exception set, or -2 to fall
 * back (a row, an id or a bm25 not of the plain types). With ``used_at``, ``found`` is the
 * kept rows' own map (Kept.lend): each row found is used, ``used_at[id]`` its tick (``tick``
 * plus its place), and a row not found falls back (read_rows reads it). */
static Py_ssize_t gather(PyObject **ids, Py_ssize_t n, PyObject *found, PyObject *used_at,
                         long long tick, PyObject *bm25, PyObject *sources, int dated,
                         Entry *entries, double *best) {
    Py_ssize_t m = 0;
    *best = 0.0;
    if (PyList_CheckExact(bm25)) { /* the ranked pairs: ids[i] the i-th one's, every one */
        if (PyList_Size(bm25) < n)
            return -2;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pair = PyList_GetItem(bm25, i);
            if (!PyTuple_CheckExact(pair) || PyTuple_Size(pair) != 2 ||
                PyTuple_GetItem(pair, 0) != ids[i])
                return -2;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyDict_GetItemWithError(found, ids[i]);
        if (row == NULL) {
            if (PyErr_Occurred())
                return -1;
            if (used_at != NULL)
                return -2; /* the kept rows' own map lost it: read_rows reads it */
            continue;      /* gone from the index since it was ranked */
        }
        if (used_at != NULL) { /* Kept's use of it: its tick (no Python runs in this loop) */
            PyObject *used = PyLong_FromLongLong(tick + (long long)i);
            int r = used ? PyDict_SetItem(used_at, ids[i], used) : -1;
            Py_XDECREF(used);
            if (r < 0)
                return -1;
        }
        if (!PyTuple_Check(row) || PyTuple_Size(row) != ROW_FIELDS ||
            !PyLong_CheckExact(ids[i]))
            return -2;
        PyObject *source = PyTuple_GetItem(row, ROW_SOURCE);
        if (!PyUnicode_CheckExact(source) || !PyUnicode_CheckExact(PyTuple_GetItem(row, ROW_TEXT)) ||
            (dated && !PyUnicode_CheckExact(PyTuple_GetItem(row, ROW_DAY))))
            return -2;
        Entry *e = &entries[m];
        memset(e, 0, sizeof(*e));
        e->row = row; /* held from here: a comparison in ``sources`` may run Python */
        Py_INCREF(row);
        int ok = PySequence_Contains(sources, source);
        if (ok <= 0) {
            Py_CLEAR(e->row);
            if (ok < 0)
                return -1;
            continue;
        }
        PyObject *score = NULL;
        if (PyList_CheckExact(bm25)) { /* checked above, again: ``sources`` may run Python */
            PyObject *pair = i < PyList_Size(bm25) ? PyList_GetItem(bm25, i) : NULL;
            if (pair == NULL || !PyTuple_CheckExact(pair) || PyTuple_Size(pair) != 2 ||
                PyTuple_GetItem(pair, 0) != ids[i])
                return -2;
            score = PyTuple_GetItem(pair, 1);
        } else if (bm25 != Py_None && (score = PyDict_GetItemWithError(bm25, ids[i])) == NULL &&
                   PyErr_Occurred()) {
            return -1;
        }
        if (score != NULL && !PyFloat_CheckExact(score))
            return -2;
        int overflow = 0;
        e->key_id = PyLong_AsLongLongAndOverflow(ids[i], &overflow);
        if (overflow != 0)
            return -2;
        if (PyErr_Occurred())
            return -1;
        e->id = ids[i];
        e->bm25 = score;
        Py_INCREF(e->id);
        Py_XINCREF(e->bm25);
        e->n = m++;
        double b = score != NULL ? PyFloat_AsDouble(score) : 0.0;
        if (score != NULL && b > 0 && b > *best) /* fuse's best_bm25 */
            *best = b;
    }
    return m;
}

typedef struct {
    double idf_total, wt, wl, wv, kw_sum, all_sum;
} Weights;

/* An entry's cached lines, refocused and kept (in ``room`` from *used, or its own array),
 * and l, its line signal (0 when ``idf_total`` is not positive): 0, or -1 with an
 * exception set or none (another numbering: fall back). */
static int entry_scores(Entry *e, const Query *qy, PyObject *vocab, double idf_total,
                        double *room, Py_ssize_t room_len, Py_ssize_t *used, double *l_out) {
    PyObject *own = compiled_item(e->chunk, 3);
    if (own == NULL)
        return -1;
    Py_DECREF(own);
    if (own != vocab)
        return -1; /* another numbering: no exception, the long way */
    Py_ssize_t n = 0;
    double *scores = entry_lines(e, qy, room + *used, room_len - *used, &n);
    if (scores == NULL)
        return -1;
    e->lines = scores;
    e->n_lines = n;
    e->owned = scores != room + *used;
    if (!e->owned)
        *used += n;
    double top = 0.0; /* max(lines or [0.0]): the first, then any greater */
    for (Py_ssize_t k = 0; k < n; k++)
        if (k == 0 || scores[k] > top)
            top = scores[k];
    double l = 0.0;
    if (idf_total > 0) {
        l = top / idf_total;
        if (!(l < 1.0))
            l = 1.0;
    }
    *l_out = l;
    return 0;
}

/* Each entry's cached lines and score (known_top's, keyword mode; dated as fuse dates it),
 * its lines kept for its hit (in ``room``, ``room_len`` doubles, while they fit; past it an
 * array of its own); an entry whose lines are not cached gets its bound (l = 1) and is
 * counted in *unlined: 0, -1 with an exception set, or -2 to fall back. */
static int score_all(Entry *entries, Py_ssize_t m, compiled_lru *lru, PyObject *vocab,
                     const Query *qy, const Weights *w, const compiled_dating *dt,
                     double best, double *room, Py_ssize_t room_len, Py_ssize_t *unlined) {
    Py_ssize_t used = 0;
    int keyword_active = best > 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        Entry *e = &entries[i];
        PyObject *text = PyTuple_GetItem(e->row, ROW_TEXT);
        e->chunk = compiled_peek(lru, e->id, text);
        double l = 0.0;
        if (e->chunk == NULL) {
            if (PyErr_Occurred())
                return -1;
            e->unlined = 1; /* not cached: _weighted_top's bound, score(c, v, t, 1.0) */
            ++*unlined;
            l = 1.0;
        } else if (entry_scores(e, qy, vocab, w->idf_total, room, room_len,
                                &used, &l) < 0) {
            return PyErr_Occurred() ? -1 : -2;
        }
        double b = e->bm25 != NULL ? PyFloat_AsDouble(e->bm25) : 0.0;
        double t = e->bm25 != NULL && keyword_active && b > 0 ? b / best : 0.0;
        if (keyword_active)
            e->s = w->kw_sum > 0 ? (w->wt * t + w->wl * l) / w->kw_sum : 0.0;
        else
            e->s = 0.0;
        e->t = t;
        if (dt->active && compiled_dated(dt, PyTuple_GetItem(e->row, ROW_DAY), text, &e->s) < 0)
            return -1;
        if (isnan(e->s))
            return -2;
    }
    return 0;
}

/* The entries whose lines are not cached left out when none could reach the top: each
 * one's bound below the ``keep``-th best cached score, i.e. at least ``keep`` cached
 * entries above it (_weighted_top stops before it then: see the top). 0, or -2 when one
 * could (the long way fills its lines). */
static int drop_unreachable(Entry *entries, Py_ssize_t *m, Py_ssize_t unlined, Py_ssize_t keep) {
    if (unlined == 0)
        return 0;
    if (keep <= 0 || *m - unlined < keep)
        return -2;
    for (Py_ssize_t i = 0; i < *m; i++) {
        if (!entries[i].unlined)
            continue;
        Py_ssize_t above = 0;
        for (Py_ssize_t j = 0; j < *m && above < keep; j++)
            above += !entries[j].unlined && entries[j].s > entries[i].s;
        if (above < keep)
            return -2;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < *m; i++) {
        if (entries[i].unlined)
            entries_clear(&entries[i], 1);
        else
            entries[kept++] = entries[i];
    }
    memset(&entries[kept], 0, (size_t)(*m - kept) * sizeof(Entry)); /* moved or cleared */
    *m = kept;
    return 0;
}

/* Room for a search's entries' lines (a LoCoMo search's ~40 chunks: ~400-800 lines). */
#define ROOM_LINES 1024
/* Room for a search's entries (10 hits x the candidate multiplier 4: 40). */
#define ROOM_ENTRIES 64

/* A search's top, its entries scored (gather, score_all), for keyword_hits. */
typedef struct {
    Query qy;
    Weights w;
    PyObject **held; /* the ids as they were, held (timed_of runs Python) */
    Py_ssize_t n, m; /* ids, accepted entries */
    Entry *entries;
    compiled_lru lru;
    compiled_dating dt;
    double room[ROOM_LINES]; /* the entries' lines while they fit (not zeroed) */
    Entry entry_room[ROOM_ENTRIES]; /* the entries while they fit (zeroed as used) */
} Top;

/* ``lines``: (lru, numbers, weights, vocab, timed_of, boost), ``lru`` LineStems._lent's
 * (items, used_at, tick); ``fusing``: the six doubles; ``dating``: compiled_dating_read's.
 * 0 with t's entries scored (those that can reach the ``keep`` best), -1 with an exception
 * set, -2 to fall back; top_clear after. */
static int top_run(Top *t, PyObject *ids, PyObject *found, PyObject *uses, PyObject *bm25,
                   PyObject *sources, PyObject *lines, PyObject *fusing, PyObject *dating,
                   Py_ssize_t keep) {
    memset(t, 0, offsetof(Top, room));
    t->qy.timed_of = Py_None;
    t->qy.boost = 1.0;
    if (!PyList_Check(ids) || !PyDict_Check(found) || !PyTuple_Check(sources) ||
        !PyTuple_Check(lines) || PyTuple_Size(lines) != 6 || !PyTuple_Check(fusing) ||
        PyTuple_Size(fusing) != 6) {
        PyErr_SetString(PyExc_TypeError, "keyword top: arguments of the wrong types");
        return -1;
    }
    if (bm25 != Py_None && !PyDict_CheckExact(bm25) && !PyList_CheckExact(bm25))
        return -2;
    int r = compiled_dating_read(dating, &t->dt);
    if (r < 0)
        return r;
    t->qy.timed_of = PyTuple_GetItem(lines, 4);
    t->qy.boost = PyFloat_AsDouble(PyTuple_GetItem(lines, 5));
    double *f = &t->w.idf_total; /* idf_total, wt, wl, wv, kw_sum, all_sum: in order */
    for (Py_ssize_t k = 0; k < 6; k++)
        f[k] = PyFloat_AsDouble(PyTuple_GetItem(fusing, k));
    if (PyErr_Occurred())
        return -1;
    if (compiled_lru_read(PyTuple_GetItem(lines, 0), &t->lru) < 0)
        return -1;
    if (compiled_read_query(PyTuple_GetItem(lines, 1), PyTuple_GetItem(lines, 2), &t->qy.q,
                            &t->qy.numbers, &t->qy.weights) < 0)
        return -1;
    t->held = compiled_hold(ids, &t->n);
    if (t->held == NULL)
        return -1;
    if (t->n <= ROOM_ENTRIES) { /* zeroed as PyMem_Calloc would (top_clear reads all n) */
        t->entries = t->entry_room;
        memset(t->entries, 0, (size_t)t->n * sizeof(Entry));
    } else {
        t->entries = PyMem_Calloc((size_t)t->n, sizeof(Entry));
    }
    if (t->entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    double best = 0.0;
    PyObject *used_at = NULL; /* uses: None, or (Kept's uses map, the first tick) */
    long long tick = 0;
    if (uses != Py_None) {
        if (!PyTuple_Check(uses) || PyTuple_Size(uses) != 2 ||
            !PyDict_CheckExact(PyTuple_GetItem(uses, 0))) {
            PyErr_SetString(PyExc_TypeError, "keyword top: uses must be (dict, tick)");
            return -1;
        }
        used_at = PyTuple_GetItem(uses, 0);
        tick = PyLong_AsLongLong(PyTuple_GetItem(uses, 1));
        if (tick == -1 && PyErr_Occurred())
            return -1;
    }
    t->m = gather(t->held, t->n, found, used_at, tick, bm25, sources, t->dt.active, t->entries,
                  &best);
    if (t->m < 0)
        return (int)t->m;
    Py_ssize_t unlined = 0;
    r = score_all(t->entries, t->m, &t->lru, PyTuple_GetItem(lines, 3), &t->qy, &t->w, &t->dt,
                  best, t->room, ROOM_LINES, &unlined);
    return r < 0 ? r : drop_unreachable(t->entries, &t->m, unlined, keep);
}

static void top_clear(Top *t) {
    if (t->entries != NULL) /* zeroed past the ones gather set (and sorted among themselves) */
        entries_clear(t->entries, t->n);
    if (t->entries != t->entry_room)
        PyMem_Free(t->entries);
    if (t->held != NULL)
        compiled_release(t->held, t->n);
    PyMem_Free(t->qy.numbers);
    PyMem_Free(t->qy.weights);
}

/* How many best entries are picked one by one (an insertion into a sorted few, ~m
 * comparisons): past it the entries are sorted whole. */
#define PICK_MAX 32

/* The ``k`` best entries (k <= PICK_MAX), in by_key's order, into ``best``: the first k the
 * whole sort would give, by_key being a total order (the place breaks every tie). */
static void pick_best(Entry *entries, Py_ssize_t m, Py_ssize_t k, Entry **best) {
    Py_ssize_t have = 0;
    for (Py_ssize_t i = 0; i < m && k > 0; i++) {
        Entry *e = &entries[i];
        if (have == k && by_key(e, best[k - 1]) >= 0)
            continue; /* not among the k best so far */
        Py_ssize_t j = have < k ? have++ : k - 1;
        for (; j > 0 && by_key(e, best[j - 1]) < 0; j--)
            best[j] = best[j - 1];
        best[j] = e;
    }
}

/* The shown entries' hits: the ``keep`` best (in order) scoring at least min_score. */
static PyObject *hits_of(Top *t, Py_ssize_t keep, compiled_show *sh) {
    Py_ssize_t k_shown = keep < t->m ? keep : t->m;
    Entry *picked[PICK_MAX];
    if (k_shown <= PICK_MAX)
        pick_best(t->entries, t->m, k_shown, picked);
    else
        qsort(t->entries, (size_t)t->m, sizeof(Entry), by_key);
    PyObject *out = PyList_New(0);
    sh->zero = out ? PyFloat_FromDouble(0.0) : NULL;
    for (Py_ssize_t k = 0; sh->zero != NULL && k < k_shown; k++) {
        Entry *e = k_shown <= PICK_MAX ? picked[k] : &t->entries[k];
        if (!(e->s >= sh->min_score))
            continue;
        PyObject *hit = compiled_hit_of(sh, e->row, e->s, e->t, e->lines, e->n_lines);
        if (hit == NULL || PyList_Append(out, hit) < 0) {
            Py_XDECREF(hit);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(hit);
    }
    if (sh->zero == NULL)
        Py_CLEAR(out);
    Py_XDECREF(sh->zero);
    return out;
}

/* keyword_hits(ids, found, uses, bm25, sources, (lru, numbers, weights, vocab, timed_of,
 * boost), (idf_total, wt, wl, wv, kw_sum, all_sum), keep, show, dating): see the top of
 * this file; ``dating``: None, or the named days and range (compiled_dating_read).
 * ``lru`` is LineStems' (_lent; its lock held by the caller). ``bm25``: the ranked (id,
 * score) pairs whose first ones are ``ids`` themselves (the same objects, in order; a
 * search's own, not made into a dict for this), or by id (a dict), or None. ``uses``: None
 * (``found``: read_rows' rows), or (the uses map, the first tick) Kept.lend gave with its
 * own map as ``found``: each row found is used there, and one not found sends the search
 * the long way. ``show``: see compiled_show. None, having made nothing, when the long way
 * must go (see the top; or a row is missing from the kept map). METH_FASTCALL: once a
 * search, and its nested tuples read as they are. */
PyObject *compiled_keyword_hits(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "keyword_hits() takes 10 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_ssize_t keep = PyLong_AsSsize_t(args[7]);
    PyObject *spec = args[8];
    if (keep == -1 && PyErr_Occurred())
        return NULL;
    if (keep < 0 || !PyTuple_Check(spec) || PyTuple_Size(spec) != 8 ||
        !PyType_Check(PyTuple_GetItem(spec, 0)) ||
        !PyType_IsSubtype((PyTypeObject *)PyTuple_GetItem(spec, 0), &PyTuple_Type) ||
        !PyTuple_Check(PyTuple_GetItem(spec, 7)) || PyTuple_Size(PyTuple_GetItem(spec, 7)) != 5) {
        PyErr_SetString(PyExc_TypeError, "keyword_hits: keep or show of the wrong types");
        return NULL;
    }
    PyObject *tiers = PyTuple_GetItem(spec, 7);
    compiled_show sh = {
        PyTuple_GetItem(spec, 0), PyTuple_GetItem(spec, 2), PyTuple_GetItem(spec, 3),
        PyTuple_GetItem(spec, 4), PyTuple_GetItem(spec, 5), PyTuple_GetItem(spec, 6),
        PyTuple_GetItem(tiers, 0), PyTuple_GetItem(tiers, 1), PyTuple_GetItem(tiers, 2),
        PyTuple_GetItem(tiers, 3), PyTuple_GetItem(tiers, 4), NULL, 0, 0.0, NULL};
    sh.budget_n = PyLong_AsSsize_t(sh.budget);
    sh.min_score = PyFloat_AsDouble(PyTuple_GetItem(spec, 1));
    if (PyErr_Occurred())
        return NULL;
    void *slot = PyType_GetSlot((PyTypeObject *)sh.hit_type, Py_tp_alloc);
    memcpy(&sh.alloc, &slot, sizeof sh.alloc);
    if (sh.alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "keyword_hits: the hit type cannot be made");
        return NULL;
    }
    Top t;
    PyObject *out = NULL;
    int r = top_run(&t, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[9],
                    keep);
    if (r == -2) {
        out = Py_None;
        Py_INCREF(out);
    } else if (r == 0) {
        out = hits_of(&t, keep, &sh);
    }
    top_clear(&t);
    return out;
}
