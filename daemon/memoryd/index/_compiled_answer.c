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

/* The rows of maps that all have the keys of the first one, in its order (what
 * compiled_hit_dicts makes: copies of one template): each map's values as they come, with
 * ``fields`` (the first's keys); 0 when one does not (its keys or their order differ), -1 on
 * error. */
static int same_rows(PyObject **maps, Py_ssize_t n, PyObject **fields, PyObject **rows) {
    if ((*fields = PyDict_Keys(maps[0])) == NULL || (*rows = PyList_New(n)) == NULL)
        return -1;
    Py_ssize_t width = PyList_Size(*fields);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyDict_Size(maps[i]) != width)
            return 0;
        PyObject *row = PyList_New(width), *key, *value;
        if (row == NULL)
            return -1;
        PyList_SetItem(*rows, i, row); /* steals row */
        Py_ssize_t pos = 0, j = 0;
        while (PyDict_Next(maps[i], &pos, &key, &value)) {
            if (j >= width || key != PyList_GetItem(*fields, j))
                return 0;
            Py_INCREF(value);
            PyList_SetItem(row, j++, value); /* steals value */
        }
    }
    return 1;
}

/* The rows of any maps: every key any has, in the order they first come; None where a map
 * has no such key. */
static int any_rows(PyObject **maps, Py_ssize_t n, PyObject **fields, PyObject **rows) {
    PyObject *known = PyDict_New(), *key, *value;
    if (known == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t pos = 0;
        while (PyDict_Next(maps[i], &pos, &key, &value)) {
            int has = PyDict_Contains(known, key);
            if (has < 0 || (!has && PyDict_SetItem(known, key, Py_None) < 0)) {
                Py_DECREF(known);
                return -1;
            }
        }
    }
    *fields = PyDict_Keys(known);
    Py_DECREF(known);
    if (*fields == NULL || (*rows = PyList_New(n)) == NULL)
        return -1;
    Py_ssize_t width = PyList_Size(*fields);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_New(width);
        if (row == NULL)
            return -1;
        PyList_SetItem(*rows, i, row); /* steals row */
        for (Py_ssize_t j = 0; j < width; j++) {
            value = PyDict_GetItemWithError(maps[i], PyList_GetItem(*fields, j));
            if (value == NULL && PyErr_Occurred())
                return -1;
            value = value != NULL ? value : Py_None;
            Py_INCREF(value);
            PyList_SetItem(row, j, value); /* steals value */
        }
    }
    return 0;
}

/* hit_rows(hits): protocol.hit_rows for a list of maps whose keys are strings: {"fields":
 * every key a map has, in the order they first come; "rows": each map's values in that
 * order, None where it has no such key}; None for anything else (the caller does it in
 * Python). Only exact dicts with exact str keys: reading them runs no Python. */
PyObject *compiled_hit_rows(PyObject *self, PyObject *args) {
    PyObject *hits, *fields = NULL, *rows = NULL, *out = NULL, *key, *value;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &hits))
        return NULL;
    if (!PyList_CheckExact(hits))
        Py_RETURN_NONE;
    Py_ssize_t n = 0;
    PyObject **held = compiled_hold(hits, &n);
    if (held == NULL)
        return NULL;
    int plain = 1, same = 0;
    for (Py_ssize_t i = 0; plain && i < n; i++) {
        Py_ssize_t pos = 0;
        plain = PyDict_CheckExact(held[i]);
        while (plain && PyDict_Next(held[i], &pos, &key, &value))
            plain = PyUnicode_CheckExact(key);
    }
    if (plain && n > 0 && (same = same_rows(held, n, &fields, &rows)) == 0) {
        Py_CLEAR(fields);
        Py_CLEAR(rows);
    }
    if (plain && n == 0)
        fields = PyList_New(0), rows = PyList_New(0);
    else if (plain && same == 0 && any_rows(held, n, &fields, &rows) < 0)
        same = -1;
    if (plain && same >= 0 && fields != NULL && rows != NULL)
        out = Py_BuildValue("{sOsO}", "fields", fields, "rows", rows);
    Py_XDECREF(fields);
    Py_XDECREF(rows);
    compiled_release(held, n);
    if (out == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return out;
}

/* Which keys a hit's map has (hit_dict): a bit per key; -1 on error. */
static long hit_keys(PyObject *hit) {
    PyObject *head = PyTuple_GetItem(hit, HEADING), *tier = PyTuple_GetItem(hit, TIER);
    int has_head = PyObject_IsTrue(head), has_tier = has_head < 0 ? -1 : PyObject_IsTrue(tier);
    if (has_tier < 0)
        return -1;
    long keys = (1L << HEADING) - 1; /* path .. source: always */
    keys |= (long)has_head << HEADING | (long)has_tier << TIER;
    keys |= (long)(PyTuple_GetItem(hit, VEC) != Py_None) << VEC;
    keys |= (long)(PyTuple_GetItem(hit, TXT) != Py_None) << TXT;
    return keys;
}

/* The row of one hit under ``order`` (width keys), or NULL with an exception set. */
static PyObject *hit_row(PyObject *hit, long keys, const int *order, int width) {
    PyObject *row = PyList_New(width);
    for (int j = 0; row != NULL && j < width; j++) {
        int k = order[j];
        PyObject *value = Py_None;
        if (!(keys & (1L << k)))
            Py_INCREF(value);
        else if (k == SCORE || k == VEC || k == TXT)
            value = round6(PyTuple_GetItem(hit, k)); /* new */
        else {
            value = PyTuple_GetItem(hit, k); /* borrowed */
            Py_INCREF(value);
        }
        if (value == NULL)
            Py_CLEAR(row);
        else
            PyList_SetItem(row, j, value); /* steals value */
    }
    return row;
}

/* The rows of hits with no meta, ``keys`` each one's; NULL with an exception set. */
static PyObject *rows_of(PyObject **hits, const long *keys, Py_ssize_t n) {
    int order[N_KEYS], width = 0;
    long seen = 0;
    for (Py_ssize_t i = 0; i < n; i++) /* every key, in the order they first come */
        for (int k = 0; k < N_KEYS; k++)
            if ((keys[i] & (1L << k)) && !(seen & (1L << k))) {
                seen |= 1L << k;
                order[width++] = k;
            }
    PyObject *fields = PyList_New(width), *rows = fields ? PyList_New(n) : NULL, *out = NULL;
    for (int j = 0; rows != NULL && j < width; j++) {
        Py_INCREF(KEYS[order[j]]);
        PyList_SetItem(fields, j, KEYS[order[j]]); /* steals it */
    }
    Py_ssize_t i = 0;
    for (; rows != NULL && i < n; i++) {
        PyObject *row = hit_row(hits[i], keys[i], order, width);
        if (row == NULL)
            break;
        PyList_SetItem(rows, i, row); /* steals row */
    }
    if (rows != NULL && i == n)
        out = Py_BuildValue("{sOsO}", "fields", fields, "rows", rows);
    Py_XDECREF(fields);
    Py_XDECREF(rows);
    return out;
}

/* hit_rows_of(hits, hit_type): hit_rows(hit_dicts(hits, hit_type)) made from the hits
 * themselves (no maps) for a list of ``hit_type`` (types.SearchHit) objects none of which
 * has a meta; None for anything else (the caller makes the maps, then their rows). */
PyObject *compiled_hit_rows_of(PyObject *self, PyObject *args) {
    PyObject *hits, *hit_type, *out = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &hits, &hit_type) || intern_keys() < 0)
        return NULL;
    if (!PyList_CheckExact(hits))
        Py_RETURN_NONE;
    Py_ssize_t n = 0;
    PyObject **held = compiled_hold(hits, &n); /* a heading's truth may run Python */
    if (held == NULL)
        return NULL;
    long *keys = PyMem_Malloc(sizeof(long) * (size_t)(n > 0 ? n : 1));
    int plain = keys != NULL;
    for (Py_ssize_t i = 0; plain && i < n; i++)
        plain = (PyObject *)Py_TYPE(held[i]) == hit_type && PyTuple_Check(held[i]) &&
                PyTuple_Size(held[i]) == HIT_FIELDS &&
                PyTuple_GetItem(held[i], HIT_FIELDS - 1) == Py_None;
    for (Py_ssize_t i = 0; plain && i < n; i++)
        if ((keys[i] = hit_keys(held[i])) < 0)
            plain = -1;
    if (keys == NULL)
        PyErr_NoMemory();
    else if (plain == 1)
        out = rows_of(held, keys, n);
    PyMem_Free(keys);
    compiled_release(held, n);
    if (out == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return out;
}
