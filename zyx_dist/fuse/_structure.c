/* Driver side: the plan cache's two graph walks (fuse/plan_cache.py `structure` and `walk`) in C, for speed.
 * They run on every realize, before its first launch: in Python a node costs about a microsecond of the walk,
 * which is the driver's largest single step for a cached plan (a 31-node attention graph's walk took 18-22 us
 * on a GPU host; GPT-2's 1,650 nodes ~1.2 ms). Takes the targets (a list of graph/ir.py Nodes); gives exactly
 * what the Python functions give (plan_cache.py keeps them as the reference, and tests/unit/test_plan_cache.py
 * compares the two on random graphs). Both walk with an explicit stack: no recursion over the graph's depth, and
 * number the nodes by a mark each C node carries (graph/_node.c), not a dict (`position`): on a 2-core VM a 31-node
 * attention graph's walk takes 1.4 us and its structure 3.0 us (3.1 and 4.4 with a dict), a 2,003-node chain's
 * 50 and 270 us (189 and 375 with a dict). `configure` hands it the Node class, whose slots and walk marks it
 * reads at their offsets, and the Op members it compares against; it knows nothing else of graph/ir.py.
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

/* Numbering the nodes. A dict (node -> position) cost most of `walk` and a third of `structure`: a hash, a probe
 * and, for a new node, an insert, a position int and at the end the key list. A node of the configured type
 * carries its own number instead (graph/_node.c's NodeObject: walk_mark, walk_pos): each walk takes a fresh
 * stamp from a 64-bit counter, and a node whose mark is
 * that stamp was met in this walk, at walk_pos; any other mark is an earlier walk's, stale by construction, so a
 * walk that stops on an error leaves nothing to undo. Nodes of any other type (graph/node.py's PyNode, where
 * _node.c is not built or ZYX_DIST_C_NODES=0; a subclass) are numbered in a dict, made at the first one met.
 *
 * One walk at a time uses the marks: a walk calls Python (a constant's repr, a dtype's name, a node's fields by
 * getattr), which could start another walk, or let another thread run one, and two walks with their own stamps
 * would overwrite each other's marks on the nodes they share, so the outer one would number a node twice. A walk
 * that starts while one is in progress (`marking`) numbers every node in its dict instead: slower, never wrong; and
 * configure() is refused meanwhile (the walk reads the marks at its class's offsets). */
static Py_ssize_t off_mark = -1, off_pos = -1;  /* the class's walk_mark and walk_pos; -1: it has none */
static unsigned long long last_stamp;  /* the last walk's stamp (0 is a node never walked) */
static int marking;                    /* a walk that uses the marks is in progress */

/* The dtypes met so far and their names (dtypes are unique objects, so the pointer names one; their class is a
 * dataclass whose hash is Python code, so no dict). */
#define DTYPES 64
static PyObject *dtype_seen[DTYPES], *dtype_names[DTYPES];
static int dtypes_seen;

/* The offset of `type`'s member `name` of member type `kind` (T_OBJECT_EX: a slot); -1 with TypeError where it is
 * something else, -1 with AttributeError where it is none. */
static int member_offset(PyTypeObject *type, const char *name, int kind, Py_ssize_t *offset) {
    PyObject *d = PyObject_GetAttrString((PyObject *)type, name);
    if (d == NULL) return -1;
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == kind;
    if (ok) *offset = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    if (!ok) PyErr_Format(PyExc_TypeError, "%s.%s is not a member of the expected type", type->tp_name, name);
    return ok ? 0 : -1;
}

static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset) {
    return member_offset(type, name, T_OBJECT_EX, offset);
}

/* The walk mark's and position's offsets of `type` into off_mark, off_pos: -1 each where it has none. */
static int mark_offsets(PyTypeObject *type) {
    Py_ssize_t mark, pos;
    off_mark = off_pos = -1;
    if (member_offset(type, "_walk_mark", T_ULONGLONG, &mark) < 0 ||
        member_offset(type, "_walk_pos", T_PYSSIZET, &pos) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();  /* (no marks: the dict) */
        return 0;
    }
    off_mark = mark;
    off_pos = pos;
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *type, *leaf, *cast, *cnst, *pad;
    if (!PyArg_ParseTuple(args, "O!OOOO", &PyType_Type, &type, &leaf, &cast, &cnst, &pad))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)type;
    if (marking) {  /* (a walk in progress reads the marks at the offsets of the class it started with) */
        PyErr_SetString(PyExc_RuntimeError, "configure() during a walk");
        return NULL;
    }
    if (slot_offset(t, "op", &off_op) < 0 || slot_offset(t, "arg", &off_arg) < 0 ||
        slot_offset(t, "shape", &off_shape) < 0 || slot_offset(t, "dtype", &off_dtype) < 0 ||
        slot_offset(t, "device", &off_device) < 0 || slot_offset(t, "srcs", &off_srcs) < 0 || mark_offsets(t) < 0)
        return NULL;
    Py_XSETREF(node_type, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(op_leaf, Py_NewRef(leaf));
    Py_XSETREF(op_cast, Py_NewRef(cast));
    Py_XSETREF(op_const, Py_NewRef(cnst));
    Py_XSETREF(op_pad, Py_NewRef(pad));
    Py_RETURN_NONE;
}

/* The walk's stack of nodes still to expand, each with its position: borrowed references (the walk's order list
 * holds every node it has numbered). */
typedef struct {
    PyObject *node;
    Py_ssize_t pos;
} Pending;

typedef struct {
    Pending *items;
    Py_ssize_t size, cap;
    PyObject *order;           /* the nodes numbered so far, in position order: the walk's result */
    PyObject *index;           /* node -> position for nodes without marks; NULL until one is met */
    unsigned long long stamp;  /* this walk's stamp, or 0 where it numbers every node in `index` */
} Walk;

/* A walk begun: its order list and stamp, and the marks taken where no other walk holds them; -1 on error. */
static int begin(Walk *w) {
    *w = (Walk){NULL, 0, 0, PyList_New(0), NULL, 0};
    if (w->order == NULL) return -1;
    if (off_mark >= 0 && !marking) {
        marking = 1;
        w->stamp = ++last_stamp;
    }
    return 0;
}

/* A walk ended, whether it finished or failed: what it holds released, the marks free for the next one. */
static void end(Walk *w) {
    if (w->stamp) marking = 0;
    PyMem_Free(w->items);
    Py_XDECREF(w->order);
    Py_XDECREF(w->index);
}

static int push(Walk *w, PyObject *node, Py_ssize_t pos) {
    if (w->size == w->cap) {
        Py_ssize_t cap = w->cap ? 2 * w->cap : 64;
        Pending *items = PyMem_Realloc(w->items, cap * sizeof(Pending));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->items = items;
        w->cap = cap;
    }
    w->items[w->size++] = (Pending){node, pos};
    return 0;
}

/* A new node's position: the next one, the node appended to the order and pushed; -1 on error. */
static Py_ssize_t number(Walk *w, PyObject *node) {
    Py_ssize_t pos = PyList_GET_SIZE(w->order);
    if (PyList_Append(w->order, node) < 0 || push(w, node, pos) < 0) return -1;
    return pos;
}

/* The position of `node` in this walk, numbering and pushing it first when new; -1 on error. */
static Py_ssize_t position(Walk *w, PyObject *node) {
    if (w->stamp && Py_TYPE(node) == node_type) {
        unsigned long long *mark = (unsigned long long *)((char *)node + off_mark);
        Py_ssize_t *at = (Py_ssize_t *)((char *)node + off_pos);
        if (*mark == w->stamp) return *at;
        Py_ssize_t pos = number(w, node);
        if (pos >= 0) {
            *mark = w->stamp;
            *at = pos;
        }
        return pos;
    }
    if (w->index == NULL && (w->index = PyDict_New()) == NULL) return -1;
    PyObject *known = PyDict_GetItemWithError(w->index, node);
    if (known != NULL) return PyLong_AsSsize_t(known);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t pos = PyList_GET_SIZE(w->order);
    PyObject *p = PyLong_FromSsize_t(pos);
    if (p == NULL) return -1;
    int err = PyDict_SetItem(w->index, node, p);
    Py_DECREF(p);
    return err < 0 ? -1 : number(w, node);
}

/* Number the targets (first sight order) and push each new one; `heads` (NULL: none wanted) gets each target's
 * position. */
static int seed(Walk *w, PyObject *targets, PyObject *heads) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(targets); i++) {
        Py_ssize_t pos = position(w, PyList_GET_ITEM(targets, i));
        if (pos < 0) return -1;
        if (heads != NULL) {
            PyObject *p = PyLong_FromSsize_t(pos);
            if (p == NULL) return -1;
            PyTuple_SET_ITEM(heads, i, p);
        }
    }
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
    Walk w;
    PyObject *flat = PyList_New(0), *heads = PyTuple_New(PyList_GET_SIZE(targets)), *result = NULL;
    if (begin(&w) < 0 || flat == NULL || heads == NULL || seed(&w, targets, heads) < 0) goto done;
    while (w.size) {
        PyObject *n = w.items[--w.size].node;  /* (borrowed: the order holds it) */
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
            Py_ssize_t pos = position(&w, PySequence_Fast_GET_ITEM(seq, i));
            if (pos < 0 || append_new(flat, PyLong_FromSsize_t(pos)) < 0) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
    }
    PyObject *rows = PyList_AsTuple(flat);
    if (rows != NULL) {
        result = Py_BuildValue("((NO)O)", rows, heads, w.order);
    }
done:
    end(&w);
    Py_XDECREF(heads);
    Py_XDECREF(flat);
    return result;
}

/* walk(targets) -> (nodes in key order, leaf rows: (position, shape, dtype name, device, arg) each): plan_cache.walk
 * without the fingerprint's count and head, which Python adds. */
static PyObject *walk(PyObject *self, PyObject *targets) {
    if (check(targets) < 0) return NULL;
    Walk w;
    PyObject *leaves = PyList_New(0), *result = NULL;
    if (begin(&w) < 0 || leaves == NULL || seed(&w, targets, NULL) < 0) goto done;
    while (w.size) {
        Pending p = w.items[--w.size];
        PyObject *srcs = field(p.node, s_srcs);
        if (srcs == NULL) goto done;
        PyObject *seq = PySequence_Fast(srcs, "a node's srcs must be a sequence");
        Py_DECREF(srcs);
        if (seq == NULL) goto done;
        Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < count; i++) {
            if (position(&w, PySequence_Fast_GET_ITEM(seq, i)) < 0) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
        if (count) continue;
        PyObject *op = field(p.node, s_op);
        if (op == NULL) goto done;
        int is_leaf = op == op_leaf;
        Py_DECREF(op);
        if (!is_leaf) continue;
        PyObject *pos = PyLong_FromSsize_t(p.pos);
        if (pos == NULL || append_new(leaves, row(p.node, pos, leaf_fields, 4)) < 0) goto done;
    }
    PyObject *kept = PyList_AsTuple(leaves);
    if (kept != NULL) result = Py_BuildValue("(ON)", w.order, kept);
done:
    end(&w);
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
