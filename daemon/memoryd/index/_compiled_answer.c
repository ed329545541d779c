/* A search's hits as the wire maps the answer carries: types.SearchHit.to_dict for each
 * hit, the same keys in the same order and the same values (its scores rounded to 6
 * places: the double round(x, 6) gives). types.py keeps the Python version, used when this
 * module is absent or a hit is not a plain SearchHit, and the tests compare the two. */

#include "_compiled.h"

#include <math.h>

#define HIT_FIELDS 13 /* types.SearchHit */

enum { PATH, START, END, SCORE, SNIPPET, SNIP_START, SNIP_END, SOURCE, HEADING, VEC, TXT, TIER };
static const char *KEY_NAMES[] = {
    "path",   "start_line", "end_line", "score",        "snippet",    "snippet_start_line",
    "snippet_end_line", "source", "heading", "vector_score", "text_score", "tier",
};
#define N_KEYS ((int)(sizeof KEY_NAMES / sizeof KEY_NAMES[0]))
static PyObject *KEYS[N_KEYS], *ROUND, *NAME_TO_DICT, *SIX; /* ROUND: builtins.round */
/* Every key in order, each None: a hit's map starts as its copy (a copy of a small dict is
 * one block; a dict grown key by key is resized twice), its values then set and the keys it
 * lacks deleted, which leaves the others in their order. */
static PyObject *TEMPLATE;

static int intern_keys(void) {
    if (TEMPLATE != NULL)
        return 0;
    for (int k = 0; k < N_KEYS; k++)
        if ((KEYS[k] = PyUnicode_InternFromString(KEY_NAMES[k])) == NULL)
            return -1;
    PyObject *builtins = PyImport_ImportModule("builtins");
    ROUND = builtins ? PyObject_GetAttrString(builtins, "round") : NULL;
    Py_XDECREF(builtins);
    NAME_TO_DICT = ROUND ? PyUnicode_InternFromString("to_dict") : NULL;
    SIX = NAME_TO_DICT ? PyLong_FromLong(6) : NULL;
    PyObject *t = SIX ? PyDict_New() : NULL;
    for (int k = 0; t != NULL && k < N_KEYS; k++)
        if (PyDict_SetItem(t, KEYS[k], Py_None) < 0)
            Py_CLEAR(t);
    TEMPLATE = t;
    return TEMPLATE ? 0 : -1;
}

/* round(x, 6). For a float whose millionfold y is below 1e9 in size and not within 0.0001
 * of a tie, the nearest integer to y over 1e6: y's rounding error (below 6e-8 there) cannot
 * move it across a tie, so that integer is the one the correctly rounded decimal has, and
 * an exact integer over the exact 1e6 is correctly rounded as strtod rounds that decimal;
 * nearbyint keeps the zero's sign, as round does. Any other value: round itself (dtoa; its
 * TypeError for a value that has no __round__). */
static PyObject *round6(PyObject *x) {
    if (PyFloat_CheckExact(x)) {
        double y = PyFloat_AsDouble(x) * 1e6;
        if (fabs(y) < 1e9) {
            double r = nearbyint(y);
            if (fabs(y - r) < 0.4999)
                return PyFloat_FromDouble(r / 1e6);
        }
    }
    return PyObject_CallFunctionObjArgs(ROUND, x, SIX, NULL);
}

static int put(PyObject *out, int key, PyObject *value) {
    if (value == NULL)
        return -1;
    int r = PyDict_SetItem(out, KEYS[key], value);
    Py_DECREF(value);
    return r;
}

static int put_as_is(PyObject *out, int key, PyObject *value) {
    Py_INCREF(value);
    return put(out, key, value);
}

/* The optional key set (round6 of ``value`` when ``rounded``) when ``present``, else gone. */
static int put_or_drop(PyObject *out, int key, int present, PyObject *value, int rounded) {
    if (!present)
        return PyDict_DelItem(out, KEYS[key]);
    return rounded ? put(out, key, round6(value)) : put_as_is(out, key, value);
}

/* One hit's map (a tuple of SearchHit's fields, held by the caller), or NULL with an
 * exception set. */
static PyObject *hit_dict(PyObject *hit) {
    PyObject *f[HIT_FIELDS];
    for (int k = 0; k < HIT_FIELDS; k++)
        f[k] = PyTuple_GetItem(hit, k); /* borrowed */
    PyObject *out = PyDict_Copy(TEMPLATE);
    if (out == NULL)
        return NULL;
    int head = PyObject_IsTrue(f[HEADING]), tier = head < 0 ? -1 : PyObject_IsTrue(f[TIER]);
    if (tier < 0 || put_as_is(out, PATH, f[PATH]) < 0 || put_as_is(out, START, f[START]) < 0 ||
        put_as_is(out, END, f[END]) < 0 || put(out, SCORE, round6(f[SCORE])) < 0 ||
        put_as_is(out, SNIPPET, f[SNIPPET]) < 0 || put_as_is(out, SNIP_START, f[SNIP_START]) < 0 ||
        put_as_is(out, SNIP_END, f[SNIP_END]) < 0 || put_as_is(out, SOURCE, f[SOURCE]) < 0 ||
        put_or_drop(out, HEADING, head, f[HEADING], 0) < 0 ||
        put_or_drop(out, VEC, f[VEC] != Py_None, f[VEC], 1) < 0 ||
        put_or_drop(out, TXT, f[TXT] != Py_None, f[TXT], 1) < 0 ||
        put_or_drop(out, TIER, tier, f[TIER], 0) < 0)
        goto fail;
    PyObject *meta = f[HIT_FIELDS - 1];
    if (meta != Py_None) {
        PyObject *more = PyObject_CallMethodObjArgs(meta, NAME_TO_DICT, NULL);
        int r = more != NULL ? PyDict_Update(out, more) : -1;
        Py_XDECREF(more);
        if (r < 0)
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* hit_dicts(hits, hit_type): [hit.to_dict() for hit in hits] for a list of ``hit_type``
 * (types.SearchHit) objects; None for anything else (the caller does it in Python). */
PyObject *compiled_hit_dicts(PyObject *self, PyObject *args) {
    PyObject *hits, *hit_type;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &hits, &hit_type) || intern_keys() < 0)
        return NULL;
    if (!PyList_CheckExact(hits))
        Py_RETURN_NONE;
    /* The hits as they are now, held: a meta's to_dict (Python) may change the list */
    Py_ssize_t n = 0;
    PyObject **held = compiled_hold(hits, &n), *out = NULL;
    if (held == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *hit = held[i];
        if ((PyObject *)Py_TYPE(hit) != hit_type || !PyTuple_Check(hit) ||
            PyTuple_Size(hit) != HIT_FIELDS) {
            compiled_release(held, n);
            Py_RETURN_NONE;
        }
    }
    out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *d = hit_dict(held[i]);
        if (d == NULL)
            Py_CLEAR(out);
        else
            PyList_SetItem(out, i, d); /* steals d */
    }
    compiled_release(held, n);
    return out;
}
