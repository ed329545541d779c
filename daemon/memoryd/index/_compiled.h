/* The index's compiled part: one extension module, memoryd.index._compiled, built from
 * _compiled.c (the module and what its functions share) and one _compiled_<what>.c per
 * concern. Each function gives the same doubles as the Python it replaces, which is kept
 * as the fallback (the module is optional in setup.py).
 *
 * Against CPython's limited API (abi3, 3.11+): one wheel per platform serves every later
 * Python. Built with -ffp-contract=off (setup.py): a fused multiply-add would round
 * differently from Python's separate multiply and add. */

#ifndef MEMORYD_INDEX_COMPILED_H
#define MEMORYD_INDEX_COMPILED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A contiguous buffer of items of ``itemsize`` bytes whose struct format is one of the
 * letters of ``kinds`` (TypeError otherwise); release it when done. */
int compiled_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *kinds);

/* Item ``i`` of a tuple or list, or any sequence: a new reference, NULL on error. */
PyObject *compiled_item(PyObject *seq, Py_ssize_t i);

/* An attribute of objects of one type (its first object's), read and set through the
 * slot's member descriptor the type's MRO holds for it, as PyObject_GenericGetAttr and
 * PyObject_GenericSetAttr would, without their lookup of it per access (~10x the read);
 * any other object, or an attribute that is not such a slot, the usual way. ``name``: an
 * interned string, borrowed; compiled_attr_clear when done. */
typedef struct {
    PyTypeObject *type;
    PyObject *name;
    PyObject *descr;
    descrgetfunc get;
    descrsetfunc set;
} compiled_attr;

int compiled_attr_init(compiled_attr *a, PyObject *first, PyObject *name);
PyObject *compiled_attr_get(compiled_attr *a, PyObject *obj);
int compiled_attr_set(compiled_attr *a, PyObject *obj, PyObject *value);
void compiled_attr_clear(compiled_attr *a);

/* The items of a list as it is now, each held (a new reference), in a new array of *n:
 * what a call reads while it may run Python (a property, a to_dict) that could change the
 * list. An array, not PyList_AsTuple: a tuple is one more tracked object counted toward a
 * collection. NULL with an exception set; compiled_release when done. */
PyObject **compiled_hold(PyObject *list, Py_ssize_t *n);
void compiled_release(PyObject **items, Py_ssize_t n);

/* _compiled_lines.c: snippets.py's line scores and snippet window. */
PyObject *compiled_line_scores(PyObject *self, PyObject *args);
PyObject *compiled_cached_line_scores(PyObject *self, PyObject *args);
PyObject *compiled_best_window(PyObject *self, PyObject *args);
PyObject *compiled_snippet(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* ... and what _compiled_top.c shares of them: the query read (numbers ascending int32,
 * weights as doubles, new PyMem arrays), a cached chunk's lines (LineStems.peek: a new
 * reference, its use given the LRU's next tick; NULL with no error when none), one chunk's line scores
 * as doubles (see _compiled_lines.c), and a list of floats of doubles (``zero`` shared). */
int compiled_read_query(PyObject *numbers_obj, PyObject *weights_obj, Py_ssize_t *q_out,
                        int32_t **numbers_out, double **weights_out);
/* LineStems' LRU as a call lends it (LineStems._lent): its chunks by id, each one's last
 * use, and the next tick to give a use; read from (items, used_at, tick), borrowed: 0, or
 * -1 with a TypeError. */
typedef struct {
    PyObject *items, *used_at;
    long long tick;
} compiled_lru;
int compiled_lru_read(PyObject *spec, compiled_lru *lru);
PyObject *compiled_peek(compiled_lru *lru, PyObject *id, PyObject *text);
double *compiled_chunk_doubles(PyObject *chunk, const int32_t *numbers, const double *weights,
                               Py_ssize_t q, double *acc, Py_ssize_t acc_len,
                               Py_ssize_t *n_lines_out);
PyObject *compiled_float_list(const double *scores, Py_ssize_t n, PyObject *zero);
/* best_window of ``lines`` (their sizes) and ``scores`` (m of them, m >= the lines' count, or
 * IndexError): 0 with *first and *last set, or -1 with an exception set. */
int compiled_window_doubles(PyObject *lines, const double *scores, Py_ssize_t m,
                            Py_ssize_t budget, Py_ssize_t *first_out, Py_ssize_t *last_out);

/* What whole_lines (the snippets' cache of a window's whole lines) gave, ``filled``, read as
 * (body, last), as _compiled_lines.c's snippet and _compiled_hits.c's hits both read it: 0
 * with *body (borrowed from ``filled``) and *last set, or -1 with an exception set. */
static inline int compiled_body_last(PyObject *filled, PyObject **body, Py_ssize_t *last) {
    if (!PyTuple_Check(filled) || PyTuple_Size(filled) != 2) {
        PyErr_SetString(PyExc_TypeError, "whole_lines must give (body, last)");
        return -1;
    }
    *last = PyLong_AsSsize_t(PyTuple_GetItem(filled, 1));
    if (*last == -1 && PyErr_Occurred())
        return -1;
    *body = PyTuple_GetItem(filled, 0);
    return 0;
}

/* _compiled_top.c: a keyword search's hits from its rows and cached lines (shown.py). */
PyObject *compiled_keyword_hits(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* _compiled_dates.c: a question naming a time, for keyword_hits: fuse's date signal (the
 * named days, their reaches, named_days, 1 - DATE_WEIGHT, DATE_WEIGHT) and the range
 * boost of Signals.adjust without meta or recency (since, until, 1 + RANGE_BOOST). */
typedef struct {
    PyObject *days, *reaches, *named_days; /* days NULL: no named day */
    PyObject *since, *until;                 /* NULL: no bound */
    double keep_w, weight, factor;
    int active; /* a named day or a range */
} compiled_dating;
int compiled_dating_read(PyObject *spec, compiled_dating *d);
/* ``*s`` dated and boosted for a chunk of ``day`` holding ``text`` (exact strs), as fuse's
 * dated() with a range-only adjust: 0, or -1 with an exception set. */
int compiled_dated(const compiled_dating *d, PyObject *day, PyObject *text, double *s);
PyObject *compiled_day_chunks(PyObject *self, PyObject *args);

/* _compiled_hits.c: what keyword_hits needs to show a hit, as shown.shown_hits and the
 * snippets' caches give it: (hit_type, min_score, budget, text_lines, whole_lines,
 * shown_text, snippet_of, (sessions, curated files, tier sessions, tier curated, tier
 * episodic)). */
typedef struct {
    PyObject *hit_type, *budget, *text_lines, *whole_lines, *shown_text, *snippet_of;
    PyObject *sessions, *curated, *tier_sessions, *tier_curated, *tier_episodic, *zero;
    Py_ssize_t budget_n;
    double min_score;
    allocfunc alloc;
} compiled_show;

/* A candidate's hit of its rows.Row ``row``, score ``s`` and text score ``t_score``, its
 * lines' scores (n; none: snippet_scores' zeros): a new reference, NULL with an error. */
PyObject *compiled_hit_of(const compiled_show *sh, PyObject *row, double s, double t_score,
                          const double *scores, Py_ssize_t n);

/* _compiled_windows.c: vectors/window_sims.py's gather of the kept windows and best window. */
PyObject *compiled_take_spans(PyObject *self, PyObject *args);
PyObject *compiled_span_best(PyObject *self, PyObject *args);

/* _compiled_fusion.c: search/fusion.py's weighted scores of known candidates, their top. */
PyObject *compiled_known_top(PyObject *self, PyObject *args);

/* _compiled_candidates.c: search/candidates.py's candidates made from their rows. */
PyObject *compiled_make_candidates(PyObject *self, PyObject *args);

/* _compiled_answer.c: types.py's hits as wire maps; protocol.hit_rows of those maps, or
 * of the hits themselves. */
PyObject *compiled_hit_dicts(PyObject *self, PyObject *args);
PyObject *compiled_hit_rows(PyObject *self, PyObject *args);
PyObject *compiled_hit_rows_of(PyObject *self, PyObject *args);

/* _compiled_pack.c: an answer's frame, as msgpack packs it (rpc/server.py's _pack). */
PyObject *compiled_pack_frame(PyObject *self, PyObject *obj);

/* _compiled_bm25.c: keyword/bm25.py's every-posting top. */
PyObject *compiled_bm25_top(PyObject *self, PyObject *args);

/* _compiled_stats.c: freshness.py's stats, the interpreter lock held. */
PyObject *compiled_stat_many(PyObject *self, PyObject *args);
PyObject *compiled_fs_type(PyObject *self, PyObject *args); /* the lock given up */

/* _compiled_watch.c: inotify and the mount table for freshness's quiet check (Linux). */
PyObject *compiled_watch_open(PyObject *self, PyObject *args);
PyObject *compiled_watch_add(PyObject *self, PyObject *args);
PyObject *compiled_watch_remove(PyObject *self, PyObject *args);
PyObject *compiled_watch_ready(PyObject *self, PyObject *args);
PyObject *compiled_watch_read(PyObject *self, PyObject *args);

#endif
