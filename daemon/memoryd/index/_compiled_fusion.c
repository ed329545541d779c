/* Compiled weighted fusion: fusion._known_top in its common case (no named day, no signal
 * adjusting a score), with fuse's best BM25 and its "every line known" check before it: the
 * same doubles from the same operations in the same order, and the same top (ties by id,
 * then by place). fusion.py keeps the Python version, used when this module is absent or
 * when this gives None (a value that is not a plain float, a line not known yet), and the
 * tests compare the two. */

#include "_compiled.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double s;      /* the score */
    long long id;  /* the candidate's id: the first tie-break */
    Py_ssize_t n;  /* its place among the candidates: the last */
    double v;      /* the vector signal, when has_v */
    int has_v;     /* 0: None */
    int v_as_is;   /* v is the candidate's window_sim object itself */
    double t;      /* the text signal (None in vector mode) */
} Fused;

/* The attribute names read, interned once (a name made per read cost ten times the read). */
static PyObject *ATTR_ID, *ATTR_BM25, *ATTR_WINDOW_SIM, *ATTR_LINES;

static int intern_names(void) {
    if (ATTR_LINES != NULL)
        return 0;
    ATTR_ID = PyUnicode_InternFromString("id");
    ATTR_BM25 = PyUnicode_InternFromString("bm25");
    ATTR_WINDOW_SIM = PyUnicode_InternFromString("window_sim");
    ATTR_LINES = ATTR_WINDOW_SIM ? PyUnicode_InternFromString("lines") : NULL;
    return ATTR_ID && ATTR_BM25 && ATTR_LINES ? 0 : -1;
}

/* fuse's sort key (-score, id, n), ascending. */
static int by_key(const void *pa, const void *pb) {
    const Fused *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s > b->s ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a->n < b->n ? -1 : (a->n > b->n);
}

/* A candidate's attributes read here (compiled_attr: one lookup a call, not a read). */
typedef struct {
    compiled_attr id, bm25, window_sim, lines;
} Attrs;

static int attrs_init(Attrs *a, PyObject **cands, Py_ssize_t n) {
    PyObject *first = n > 0 ? cands[0] : NULL;
    memset(a, 0, sizeof(*a));
    return compiled_attr_init(&a->id, first, ATTR_ID) < 0 ||
                   compiled_attr_init(&a->bm25, first, ATTR_BM25) < 0 ||
                   compiled_attr_init(&a->window_sim, first, ATTR_WINDOW_SIM) < 0 ||
                   compiled_attr_init(&a->lines, first, ATTR_LINES) < 0
               ? -1
               : 0;
}

static void attrs_clear(Attrs *a) {
    compiled_attr_clear(&a->id);
    compiled_attr_clear(&a->bm25);
    compiled_attr_clear(&a->window_sim);
    compiled_attr_clear(&a->lines);
}

/* An attribute of ``c`` as a double: 1 with *value set, 0 for None, -1 when it is not a
 * plain float (the caller falls back to Python) or on error (PyErr set). */
static int opt_float(PyObject *c, compiled_attr *attr, double *value, PyObject **obj) {
    PyObject *x = compiled_attr_get(attr, c);
    if (x == NULL)
        return -1;
    if (x == Py_None) {
        Py_DECREF(x);
        return 0;
    }
    if (!PyFloat_CheckExact(x)) {
        Py_DECREF(x);
        return -1;
    }
    *value = PyFloat_AsDouble(x);
    if (obj != NULL)
        *obj = x; /* the caller's reference */
    else
        Py_DECREF(x);
    return 1;
}

/* max(lines or [0.0]) of a list of plain floats: the first, then any greater. 1 with *top
 * set, 0 when ``lines`` is None, -1 when it is not such a list. */
static int best_line(PyObject *c, compiled_attr *attr, double *top) {
    PyObject *lines = compiled_attr_get(attr, c);
    if (lines == NULL)
        return -1;
    int found = 0;
    if (lines == Py_None) {
        Py_DECREF(lines);
        return 0;
    }
    if (PyList_CheckExact(lines)) {
        Py_ssize_t n = PyList_Size(lines);
        found = 1;
        *top = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PyList_GetItem(lines, i); /* borrowed */
            if (x == NULL || !PyFloat_CheckExact(x)) {
                found = -1;
                break;
            }
            double d = PyFloat_AsDouble(x);
            if (i == 0 || d > *top)
                *top = d;
        }
    } else {
        found = -1;
    }
    Py_DECREF(lines);
    return found;
}

typedef struct {
    int vector, hybrid, keyword_active, lined;
    double best_bm25, idf_total, wt, wl, wv, kw_sum, all_sum;
} Plan;

/* One candidate's signals and score, as _known_top computes them: 0, or 1 to fall back. */
static int score_one(PyObject *c, const Plan *p, Attrs *a, Fused *f, PyObject **window_sim) {
    double x = 0.0, b = 0.0, top = 0.0;
    int has_x = opt_float(c, &a->window_sim, &x, window_sim);
    if (has_x < 0)
        return 1;
    f->has_v = has_x;
    f->v_as_is = has_x && 0.0 < x && x < 1.0;
    if (has_x && !f->v_as_is) { /* max(0.0, min(1.0, x)): each keeps its first on a tie */
        double m = x < 1.0 ? x : 1.0;
        x = m > 0.0 ? m : 0.0;
    }
    f->v = x;
    if (p->vector) {
        f->s = has_x && x != 0.0 ? x : 0.0; /* v or 0.0 */
        f->t = 0.0;
        return 0;
    }
    int has_b = opt_float(c, &a->bm25, &b, NULL);
    if (has_b < 0)
        return 1;
    double t = has_b && p->keyword_active && b > 0 ? b / p->best_bm25 : 0.0;
    double l = 0.0;
    if (p->lined) {
        if (best_line(c, &a->lines, &top) != 1)
            return 1;
        l = top / p->idf_total;
        if (!(l < 1.0))
            l = 1.0;
    }
    double s;
    if (p->hybrid && has_x) {
        if (p->keyword_active)
            s = p->all_sum > 0 ? (p->wt * t + p->wl * l + p->wv * x) / p->all_sum : 0.0;
        else
            s = p->wv > 0 ? (p->wv * x) / p->wv : 0.0;
    } else if (p->keyword_active) {
        s = p->kw_sum > 0 ? (p->wt * t + p->wl * l) / p->kw_sum : 0.0;
    } else {
        s = 0.0;
    }
    f->s = s;
    f->t = t;
    return 0;
}

/* fuse's best_bm25 (the greatest positive bm25, else 0.0) and whether every candidate's
 * lines are known: 0, or 1 to fall back (a bm25 that is not a plain float or None). */
static int survey(PyObject **cands, Py_ssize_t n, Plan *p, Attrs *a, int *all_known) {
    double best = 0.0;
    *all_known = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = cands[i]; /* held */
        double b = 0.0;
        int has_b = opt_float(c, &a->bm25, &b, NULL);
        if (has_b < 0)
            return 1;
        if (has_b && b > 0 && b > best)
            best = b;
        if (!p->vector && *all_known) {
            PyObject *lines = compiled_attr_get(&a->lines, c);
            if (lines == NULL)
                return 1;
            *all_known = lines != Py_None;
            Py_DECREF(lines);
        }
    }
    p->best_bm25 = best;
    p->keyword_active = best > 0;
    return 0;
}

static PyObject *scored_tuple(const Fused *f, PyObject *c, PyObject *window_sim, int vector) {
    PyObject *s = PyFloat_FromDouble(f->s), *v, *t;
    if (!f->has_v) {
        v = Py_None;
        Py_INCREF(v);
    } else if (f->v_as_is) {
        v = window_sim;
        Py_INCREF(v);
    } else {
        v = PyFloat_FromDouble(f->v);
    }
    if (vector) {
        t = Py_None;
        Py_INCREF(t);
    } else {
        t = PyFloat_FromDouble(f->t);
    }
    PyObject *out = s && v && t ? PyTuple_Pack(4, s, v, t, c) : NULL;
    Py_XDECREF(s);
    Py_XDECREF(v);
    Py_XDECREF(t);
    return out;
}

/* known_top(cands, vector, hybrid, idf_total, (wt, wl, wv, kw_sum, all_sum), keep):
 * fusion._known_top's [(score, v, t, candidate)] for a search with no named day and no
 * adjusting signal, best first; None when Python must do it (see the top of this file). */
PyObject *compiled_known_top(PyObject *self, PyObject *args) {
    PyObject *cands;
    int vector, hybrid;
    Py_ssize_t keep;
    Plan p;
    (void)self;
    if (intern_names() < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "Oppd(ddddd)n", &cands, &vector, &hybrid,
                          &p.idf_total, &p.wt, &p.wl, &p.wv, &p.kw_sum, &p.all_sum, &keep))
        return NULL;
    p.vector = vector;
    p.hybrid = hybrid;
    p.lined = !vector && p.idf_total > 0;
    if (!PyList_CheckExact(cands))
        Py_RETURN_NONE;
    /* The candidates as they are now, held: reading another type's attribute the usual way
     * may run Python (a property), which may change the list */
    Py_ssize_t n = 0;
    PyObject **held = compiled_hold(cands, &n);
    if (held == NULL)
        return NULL;
    int all_known = 0;
    Attrs a;
    if (attrs_init(&a, held, n) < 0) {
        attrs_clear(&a);
        compiled_release(held, n);
        return NULL;
    }
    if (keep < 0 || survey(held, n, &p, &a, &all_known) != 0 || !(vector || all_known)) {
        attrs_clear(&a);
        compiled_release(held, n);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    Fused *fused = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Fused));
    PyObject **sims = PyMem_Calloc((size_t)(n ? n : 1), sizeof(PyObject *));
    PyObject *out = NULL;
    int fall_back = 0;
    if (fused == NULL || sims == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n && !fall_back; i++) {
        PyObject *c = held[i];
        PyObject *id = compiled_attr_get(&a.id, c);
        if (id == NULL)
            goto done;
        int overflow = 0;
        fused[i].id = PyLong_Check(id) ? PyLong_AsLongLongAndOverflow(id, &overflow) : 0;
        fall_back = !PyLong_Check(id) || overflow != 0;
        Py_DECREF(id);
        if (PyErr_Occurred())
            goto done;
        fused[i].n = i;
        fall_back = fall_back || score_one(c, &p, &a, &fused[i], &sims[i]) != 0 || isnan(fused[i].s);
        if (PyErr_Occurred())
            goto done;
    }
    if (fall_back) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    qsort(fused, (size_t)n, sizeof(Fused), by_key);
    Py_ssize_t shown = keep < n ? keep : n;
    out = PyList_New(shown);
    for (Py_ssize_t k = 0; out != NULL && k < shown; k++) {
        Py_ssize_t i = fused[k].n;
        PyObject *item = scored_tuple(&fused[k], held[i], sims[i], vector);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SetItem(out, k, item); /* steals item */
    }
done:
    if (sims != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(sims[i]);
    PyMem_Free(sims);
    PyMem_Free(fused);
    attrs_clear(&a);
    compiled_release(held, n);
    return out;
}
