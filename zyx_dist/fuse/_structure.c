/* Driver side: the plan cache's two graph walks (fuse/plan_cache.py `structure` and `walk`) in C, for speed.
 * They run on every realize, before its first launch: in Python a node costs about a microsecond of the walk,
 * which is the driver's largest single step for a cached plan (a 31-node attention graph's walk took 18-22 us
 * on a GPU host; GPT-2's 1,650 nodes ~1.2 ms). Takes the targets (a list of graph/ir.py Nodes); gives exactly
 * what the Python functions give (plan_cache.py keeps them as the reference, and tests/unit/test_plan_cache.py
 * compares the two on random graphs). Both walk with an explicit stack: no recursion over the graph's depth.
 * `configure` hands it the Node class, whose slots it reads at their offsets, and the Op members it compares
 * against; it knows nothing else of graph/ir.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *op_leaf, *op_cast, *op_const, *op_pad;  /* set by configure() */
static PyObject *s_op, *s_arg, *s_shape, *s_dtype, *s_name, *s_device, *s_srcs;

/* The Node class and the byte offsets of its slots, read straight from a Node (its fields are set in __init__
 * and only rebound after): one load each, where a getattr costs tens of nanoseconds. Another type of node (none
 * is made today) takes getattr. */
static PyTypeObject *node_type;
static Py_ssize_t off_op, off_arg, off_shape, off_dtype, off_device, off_srcs;

/* The dtypes met so far and their names (dtypes are unique objects, so the pointer names one; their class is a
 * dataclass whose hash is Python code, so no dict). */
#define DTYPES 64
static PyObject *dtype_seen[DTYPES], *dtype_names[DTYPES];
static int dtypes_seen;

static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset) {
    PyObject *d = PyObject_GetAttrString((PyObject *)type, name);
    if (d == NULL) return -1;
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
    if (ok) *offset = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    if (!ok) PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
    return ok ? 0 : -1;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *type, *leaf, *cast, *cnst, *pad;
    if (!PyArg_ParseTuple(args, "O!OOOO", &PyType_Type, &type, &leaf, &cast, &cnst, &pad))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)type;
    if (slot_offset(t, "op", &off_op) < 0 || slot_offset(t, "arg", &off_arg) < 0 ||
        slot_offset(t, "shape", &off_shape) < 0 || slot_offset(t, "dtype", &off_dtype) < 0 ||
        slot_offset(t, "device", &off_device) < 0 || slot_offset(t, "srcs", &off_srcs) < 0)
        return NULL;
    Py_XSETREF(node_type, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(op_leaf, Py_NewRef(leaf));
    Py_XSETREF(op_cast, Py_NewRef(cast));
    Py_XSETREF(op_const, Py_NewRef(cnst));
    Py_XSETREF(op_pad, Py_NewRef(pad));
    Py_RETURN_NONE;
}

/* The walks' stack: borrowed references (the index dict, which numbers every node pushed, holds each one). */
typedef struct {
    PyObject **items;
    Py_ssize_t size, cap;
} Stack;

static int push(Stack *st, PyObject *node) {
    if (st->size == st->cap) {
        Py_ssize_t cap = st->cap ? 2 * st->cap : 64;
        PyObject **items = PyMem_Realloc(st->items, cap * sizeof(PyObject *));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        st->items = items;
        st->cap = cap;
    }
    st->items[st->size++] = node;
    return 0;
}

/* The position of `node` in `index` (borrowed), numbering it and pushing it first when new; NULL on error. */
static PyObject *position(PyObject *index, Stack *st, PyObject *node) {
    PyObject *pos = PyDict_GetItemWithError(index, node);
    if (pos != NULL || PyErr_Occurred()) return pos;
    pos = PyLong_FromSsize_t(PyDict_GET_SIZE(index));
    if (pos == NULL) return NULL;
    int err = PyDict_SetItem(index, node, pos);
    Py_DECREF(pos);  /* (the dict holds it) */
    if (err < 0 || push(st, node) < 0) return NULL;
    return pos;
}

/* Number the targets (first sight order) and push each new one. */
static int seed(PyObject *targets, PyObject *index, Stack *st) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(targets); i++)
        if (position(index, st, PyList_GET_ITEM(targets, i)) == NULL) return -1;
    return 0;
}

/* A dtype's name (a new reference). */
static PyObject *dtype_name(PyObject *dtype) {
    for (int i = 0; i < dtypes_seen; i++)
        if (dtype_seen[i] == dtype) return Py_NewRef(dtype_names[i]);
    PyObject *name = PyObject_GetAttr(dtype, s_name);
    if (name != NULL && dtypes_seen < DTYPES) {
        dtype_seen[dtypes_seen] = Py_NewRef(dtype);  /* (kept: the pointer must not name another object) */
        dtype_names[dtypes_seen++] = Py_NewRef(name);
    }
    return name;
}

/* n.<name> as a new reference, where name is an interned field name (for s_dtype: the dtype's name). */
static PyObject *field(PyObject *node, PyObject *name) {
    PyObject *v = NULL;
    if (Py_TYPE(node) == node_type) {
        Py_ssize_t off = name == s_op ? off_op : name == s_arg ? off_arg : name == s_shape ? off_shape
                       : name == s_dtype ? off_dtype : name == s_device ? off_device : off_srcs;
        v = *(PyObject **)((char *)node + off);
    }
    if (v == NULL) {  /* another type, or a field never set (getattr raises the AttributeError) */
        v = PyObject_GetAttr(node, name);
        if (v == NULL) return NULL;
    } else
        Py_INCREF(v);
    if (name != s_dtype) return v;
    PyObject *dname = dtype_name(v);
    Py_DECREF(v);
    return dname;
}

/* A tuple of `first` (stolen; NULL: none) and then `count` fields of `node` (a new reference). */
static PyObject *row(PyObject *node, PyObject *first, PyObject *const *names, Py_ssize_t count) {
    Py_ssize_t at = first != NULL;
    PyObject *r = PyTuple_New(count + at);
    if (r == NULL) {
        Py_XDECREF(first);
        return NULL;
    }
    if (first != NULL) PyTuple_SET_ITEM(r, 0, first);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *v = field(node, names[i]);
        if (v == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, at + i, v);
    }
    return r;
}

/* A constant's float value as the 8 bytes of its double, in the machine's order: what plan_cache.value_key gives
 * (exact, -0.0 apart from 0.0; repr runs the shortest-digits conversion, 0.1-0.3 us a float on every realize). */
static PyObject *float_bytes(PyObject *x) {
    double d = PyFloat_AS_DOUBLE(x);
    return PyBytes_FromStringAndSize((const char *)&d, sizeof d);
}

/* A computed node's row, (op, argument, shape, dtype name, device): a cast's argument is its dtype's name, a
 * constant's float its bytes, any other constant's or pad's its repr (which tells -0.0 from 0.0 and matches NaN with
 * NaN), any other one as it is. */
static PyObject *op_row(PyObject *node, PyObject *op) {
    PyObject *arg = field(node, s_arg);
    if (arg != NULL && (op == op_cast || op == op_const || op == op_pad)) {
        PyObject *shown = op == op_cast ? dtype_name(arg)
            : op == op_const && PyFloat_CheckExact(arg) ? float_bytes(arg) : PyObject_Repr(arg);
        Py_DECREF(arg);
        arg = shown;
    }
    if (arg == NULL) return NULL;
    PyObject *const rest[] = {s_shape, s_dtype, s_device};
    PyObject *r = PyTuple_New(5);
    if (r == NULL) {
        Py_DECREF(arg);
        return NULL;
    }
    PyTuple_SET_ITEM(r, 0, Py_NewRef(op));
    PyTuple_SET_ITEM(r, 1, arg);
    for (int i = 0; i < 3; i++) {
        PyObject *v = field(node, rest[i]);
        if (v == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, 2 + i, v);
    }
    return r;
}

static int append_new(PyObject *list, PyObject *item) {  /* steals `item` */
    if (item == NULL) return -1;
    int err = PyList_Append(list, item);
    Py_DECREF(item);
    return err;
}

static PyObject *leaf_fields[4];  /* shape, dtype, device, arg: set at import */

static int check(PyObject *targets) {
    if (!PyList_CheckExact(targets)) {
        PyErr_SetString(PyExc_TypeError, "the walks take a list of nodes");
        return -1;
    }
    if (op_leaf == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return -1;
    }
    return 0;
}

/* structure(targets) -> ((key rows, target positions), nodes in key order): plan_cache.structure. */
static PyObject *structure(PyObject *self, PyObject *targets) {
    if (check(targets) < 0) return NULL;
    Stack st = {NULL, 0, 0};
    PyObject *index = PyDict_New(), *flat = PyList_New(0), *result = NULL;
    if (index == NULL || flat == NULL || seed(targets, index, &st) < 0) goto done;
    while (st.size) {
        PyObject *n = st.items[--st.size];  /* (borrowed: the index holds it) */
        PyObject *op = field(n, s_op);
        if (op == NULL) goto done;
        if (op == op_leaf) {
            Py_DECREF(op);
            if (append_new(flat, row(n, NULL, leaf_fields, 4)) < 0) goto done;
            continue;
        }
        int err = append_new(flat, op_row(n, op));
        Py_DECREF(op);
        if (err < 0) goto done;
        PyObject *srcs = field(n, s_srcs);
        if (srcs == NULL) goto done;
        PyObject *seq = PySequence_Fast(srcs, "a node's srcs must be a sequence");
        Py_DECREF(srcs);
        if (seq == NULL) goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *pos = position(index, &st, PySequence_Fast_GET_ITEM(seq, i));
            if (pos == NULL || PyList_Append(flat, pos) < 0) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
    }
    Py_ssize_t nt = PyList_GET_SIZE(targets);
    PyObject *heads = PyTuple_New(nt);
    if (heads == NULL) goto done;
    for (Py_ssize_t i = 0; i < nt; i++) {
        PyObject *pos = PyDict_GetItemWithError(index, PyList_GET_ITEM(targets, i));
        if (pos == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a target left the walk's index");
            Py_DECREF(heads);
            goto done;
        }
        PyTuple_SET_ITEM(heads, i, Py_NewRef(pos));
    }
    PyObject *rows = PyList_AsTuple(flat);
    PyObject *order = rows ? PyDict_Keys(index) : NULL;  /* insertion order is position order */
    if (order != NULL) result = Py_BuildValue("((NN)N)", rows, heads, order);
    else {
        Py_XDECREF(rows);
        Py_DECREF(heads);
    }
done:
    PyMem_Free(st.items);
    Py_XDECREF(index);
    Py_XDECREF(flat);
    return result;
}

/* walk(targets) -> (nodes in key order, leaf rows: (position, shape, dtype name, device, arg) each): plan_cache.walk
 * without the fingerprint's count and head, which Python adds. */
static PyObject *walk(PyObject *self, PyObject *targets) {
    if (check(targets) < 0) return NULL;
    Stack st = {NULL, 0, 0};
    PyObject *index = PyDict_New(), *leaves = PyList_New(0), *result = NULL;
    if (index == NULL || leaves == NULL || seed(targets, index, &st) < 0) goto done;
    while (st.size) {
        PyObject *n = st.items[--st.size];
        PyObject *srcs = field(n, s_srcs);
        if (srcs == NULL) goto done;
        PyObject *seq = PySequence_Fast(srcs, "a node's srcs must be a sequence");
        Py_DECREF(srcs);
        if (seq == NULL) goto done;
        Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < count; i++) {
            if (position(index, &st, PySequence_Fast_GET_ITEM(seq, i)) == NULL) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
        if (count) continue;
        PyObject *op = field(n, s_op);
        if (op == NULL) goto done;
        int is_leaf = op == op_leaf;
        Py_DECREF(op);
        if (!is_leaf) continue;
        PyObject *pos = PyDict_GetItemWithError(index, n);
        if (pos == NULL || append_new(leaves, row(n, Py_NewRef(pos), leaf_fields, 4)) < 0) goto done;
    }
    PyObject *order = PyDict_Keys(index), *kept = order ? PyList_AsTuple(leaves) : NULL;
    if (kept != NULL) result = Py_BuildValue("(NN)", order, kept);
    else Py_XDECREF(order);
done:
    PyMem_Free(st.items);
    Py_XDECREF(index);
    Py_XDECREF(leaves);
    return result;
}

/* plan_cache._Key in C: a structure key whose hash is computed once, at its making. A cached plan's lookup hashes
 * its key and compares it with the stored one; as Python methods those calls cost about a microsecond a realize. */
typedef struct {
    PyObject_HEAD
    PyObject *rows;
    Py_hash_t hash;
} KeyObject;

static PyObject *key_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *rows;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Key takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "Key", 1, 1, &rows)) return NULL;
    Py_hash_t h = PyObject_Hash(rows);  /* TypeError for rows that cannot be hashed */
    if (h == -1) return NULL;
    KeyObject *k = (KeyObject *)type->tp_alloc(type, 0);
    if (!k) return NULL;
    Py_INCREF(rows);
    k->rows = rows;
    k->hash = h;
    return (PyObject *)k;
}

static void key_dealloc(KeyObject *k) {
    Py_XDECREF(k->rows);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static Py_hash_t key_hash(KeyObject *k) { return k->hash; }

static PyTypeObject KeyType;

static PyObject *key_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &KeyType)) Py_RETURN_NOTIMPLEMENTED;
    int equal = a == b;
    if (!equal && ((KeyObject *)a)->hash == ((KeyObject *)b)->hash) {
        equal = PyObject_RichCompareBool(((KeyObject *)a)->rows, ((KeyObject *)b)->rows, Py_EQ);
        if (equal < 0) return NULL;
    }
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyMemberDef key_members[] = {
    {"rows", T_OBJECT_EX, offsetof(KeyObject, rows), READONLY, "the structure's rows"},
    {"hash", T_PYSSIZET, offsetof(KeyObject, hash), READONLY, "hash(rows)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject KeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zyx_dist.fuse._structure.Key",
    .tp_basicsize = sizeof(KeyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Key(rows): a structure key with its hash computed once (plan_cache._Key in C).",
    .tp_new = key_new,
    .tp_dealloc = (destructor)key_dealloc,
    .tp_hash = (hashfunc)key_hash,
    .tp_richcompare = key_richcompare,
    .tp_members = key_members,
};

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(Node, Op.LEAF, Op.CAST, Op.CONST, Op.PAD): the node class and the ops the walks compare."},
    {"structure", structure, METH_O, "plan_cache.structure in C."},
    {"walk", walk, METH_O, "plan_cache.walk in C, less the fingerprint's count and head: (nodes, leaf rows)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_structure", NULL, -1, methods};

PyMODINIT_FUNC PyInit__structure(void) {
    s_op = PyUnicode_InternFromString("op");
    s_arg = PyUnicode_InternFromString("arg");
    s_shape = PyUnicode_InternFromString("shape");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_name = PyUnicode_InternFromString("name");
    s_device = PyUnicode_InternFromString("device");
    s_srcs = PyUnicode_InternFromString("srcs");
    if (!s_op || !s_arg || !s_shape || !s_dtype || !s_name || !s_device || !s_srcs) return NULL;
    leaf_fields[0] = s_shape;
    leaf_fields[1] = s_dtype;
    leaf_fields[2] = s_device;
    leaf_fields[3] = s_arg;
    if (PyType_Ready(&KeyType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&KeyType);
    if (PyModule_AddObject(m, "Key", (PyObject *)&KeyType) < 0) {
        Py_DECREF(&KeyType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
