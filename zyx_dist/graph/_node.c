/* Driver side: the lazy graph's node (graph/node.py `Node`) and its most frequent constructors (graph/ir.py) in C.
 * Building a model's graph makes one node per op, and in Python a node's constructor costs about 0.7 us (a frame,
 * 14 attribute stores) and the checks and folds of a view or an arithmetic op about as much again: together most of
 * what building a node costs. Takes what node.py's Node and ir.py's reshape, expand, permute, cast, unary and
 * binary take (reduce and linalg.py's matmul of nodes are in _node_contract.c, included below); gives `NodeBase`,
 * the base type of Node, whose fields are the same slots with the same values as the Python class's (its methods
 * and properties stay in Python, but for become_leaf), and the constructors' usual cases, which hand every other
 * case (a fold of a constant, an error to raise, an argument that is not a tuple of ints) to the Python function
 * they stand for. node.py and ir.py keep the Python forms as the reference and the fallback where this is not
 * built; tests/unit/test_node_c.py compares the two. Also frontend/common.py's broadcast of two shapes, which every
 * binary op and matmul asks for, and frontend/elementwise.py's binary op of tensors. The configure functions hand
 * it the Node class, the id counter (one sequence of ids for every node of a process), the function that merges two
 * sources' guards, the ops it compares against, the dtype rules of the unary and binary operators and the Python
 * fallbacks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *weakrefs;
    PyObject *id, *op, *srcs, *arg, *shape, *dtype, *guards, *size, *buffer, *host, *device, *lineage, *origin,
        *weight, *merged;
    /* The plan cache's graph walks (fuse/_structure.c) number the nodes they meet here, not in a dict: the stamp
     * of the last walk that met this node and its position in that walk. Plain C, zero at allocation (tp_alloc
     * zeroes), read and written only by those walks; Python sees them read-only, as _walk_mark and _walk_pos,
     * which is how _structure.c finds their offsets. */
    unsigned long long walk_mark;
    Py_ssize_t walk_pos;
} NodeObject;

static PyObject *ids;           /* ir._ids, an itertools.count */
static PyObject *merge_guards;  /* ir.merged_guards(a, b) */
static PyObject *op_leaf;  /* Op.LEAF, for become_leaf */
static PyObject *one;           /* the int 1: a new node's weight */

/* Set by configure_constructors: the Node class (ir.Node, a subclass of NodeBase), the ops compared against or
 * made, the rules of the operators (op -> RULE_* below; an op not there takes the Python function), the dtypes
 * and their kinds (a dtype not among them takes the Python function), and the Python functions each
 * constructor hands its other cases to. */
static PyTypeObject *node_class;
static PyObject *op_const, *op_reshape, *op_expand, *op_permute, *op_cast, *op_unary, *op_binary;
static PyObject *unary_rules, *binary_rules, *bool_dtype;
static PyObject *py_reshape, *py_expand, *py_permute, *py_cast, *py_unary, *py_binary;
static PyObject *py_broadcast;  /* frontend/common.py's broadcast_shapes, set by configure_broadcast */

/* Set by configure_frontend: the Tensor class and the byte offset of its `node` slot, frontend/common.py's shared
 * scalar constants (its dict, and scalar_const for a miss), elementwise.py's `_to_float` and `_binary`. */
static PyTypeObject *tensor_class;
static Py_ssize_t off_tensor_node;
static PyObject *scalar_consts, *py_scalar_const, *to_float, *py_tensor_binary;

enum { RULE_ANY = 0, RULE_BOOL_RESULT = 1, RULE_FLOAT_ONLY = 2, RULE_NOT_BOOL = 3, RULE_NOT_FLOAT = 4 };
enum { KIND_UNKNOWN = -1, KIND_INT = 0, KIND_FLOAT = 1, KIND_BOOL = 2 };
#define DTYPES 32
static PyObject *dtypes[DTYPES];  /* dtypes are unique objects: the pointer names one (their hash is Python code) */
static int dtype_kinds[DTYPES], ndtypes;

#define FIELD(name, doc) {#name, T_OBJECT_EX, offsetof(NodeObject, name), 0, doc}
static PyMemberDef node_members[] = {
    FIELD(id, "the node's number, unique in the process"),
    FIELD(op, "its ir.Op"),
    FIELD(srcs, "its inputs, a tuple of nodes"),
    FIELD(arg, "its parameters"),
    FIELD(shape, "its shape, a tuple of ints"),
    FIELD(dtype, "its dtypes.DType"),
    FIELD(guards, "the value checks it depends on, or None"),
    FIELD(size, "its number of elements"),
    FIELD(buffer, "its device buffer once realized, else None"),
    FIELD(host, "the NumPy data of a leaf not uploaded yet, else None"),
    FIELD(device, "a pinned device name, or None"),
    FIELD(lineage, "how to recompute its value once realized (graph/lineage.py), or None"),
    FIELD(origin, "in a recipe: a weak reference to the live node it describes"),
    FIELD(weight, "in a recipe: a bound on its size in nodes"),
    FIELD(merged, "a view merged into the one below it: (op, arg, the view it was built on), else None"),
    {"_walk_mark", T_ULONGLONG, offsetof(NodeObject, walk_mark), READONLY, "the stamp of the last plan walk here"},
    {"_walk_pos", T_PYSSIZET, offsetof(NodeObject, walk_pos), READONLY, "its position in that walk"},
    {NULL},
};

/* The product of a shape's dims, as math.prod gives it (ints that overflow 64 bits go on as Python ints). */
static PyObject *shape_size(PyObject *shape) {
    if (!PyTuple_CheckExact(shape)) {
        PyErr_Format(PyExc_TypeError, "a node's shape must be a tuple, got %.100s", Py_TYPE(shape)->tp_name);
        return NULL;
    }
    long long size = 1;
    Py_ssize_t n = PyTuple_GET_SIZE(shape), i = 0;
    for (; i < n; i++) {
        int overflow;
        long long d = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(shape, i), &overflow);
        if (d == -1 && PyErr_Occurred()) return NULL;
        if (overflow || __builtin_mul_overflow(size, d, &size)) break;
    }
    if (i == n) return PyLong_FromLongLong(size);
    PyObject *total = PyLong_FromLong(1);  /* (the rare way: Python ints from the start) */
    for (i = 0; total != NULL && i < n; i++) Py_SETREF(total, PyNumber_Multiply(total, PyTuple_GET_ITEM(shape, i)));
    return total;
}

/* The sources' guards, as ir.Node's constructor merges them: almost always None. A new reference. */
static PyObject *sources_guards(PyObject *srcs, PyTypeObject *base) {
    PyObject *g = Py_NewRef(Py_None);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(srcs); i++) {
        PyObject *s = PyTuple_GET_ITEM(srcs, i), *sg;
        if (!PyObject_TypeCheck(s, base)) {
            Py_DECREF(g);
            PyErr_Format(PyExc_TypeError, "a node's sources must be nodes, got %.100s", Py_TYPE(s)->tp_name);
            return NULL;
        }
        sg = ((NodeObject *)s)->guards;
        if (sg == NULL || sg == Py_None || sg == g) continue;
        if (g == Py_None) {
            Py_SETREF(g, Py_NewRef(sg));
            continue;
        }
        Py_SETREF(g, PyObject_CallFunctionObjArgs(merge_guards, g, sg, NULL));
        if (g == NULL) return NULL;
    }
    return g;
}

static PyTypeObject NodeType;

/* A new node of `type` with these fields (borrowed; `srcs` a tuple of nodes), as ir.Node's constructor makes it. */
static PyObject *make_node(PyTypeObject *type, PyObject *op, PyObject *srcs, PyObject *arg, PyObject *shape,
                           PyObject *dtype, PyObject *host, PyObject *device) {
    if (ids == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "zyx_dist.graph._node is not configured (graph/ir.py does that)");
        return NULL;
    }
    if (!PyTuple_Check(srcs)) {
        PyErr_Format(PyExc_TypeError, "a node's sources must be a tuple, got %.100s", Py_TYPE(srcs)->tp_name);
        return NULL;
    }
    PyObject *size = shape_size(shape);
    if (size == NULL) return NULL;
    PyObject *guards = sources_guards(srcs, &NodeType);
    if (guards == NULL) {
        Py_DECREF(size);
        return NULL;
    }
    PyObject *id = Py_TYPE(ids)->tp_iternext(ids);
    if (id == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the node id counter ended");
        Py_DECREF(size);
        Py_DECREF(guards);
        return NULL;
    }
    NodeObject *n = (NodeObject *)type->tp_alloc(type, 0);
    if (n == NULL) {
        Py_DECREF(size);
        Py_DECREF(guards);
        Py_DECREF(id);
        return NULL;
    }
    n->id = id;
    n->op = Py_NewRef(op);
    n->srcs = Py_NewRef(srcs);
    n->arg = Py_NewRef(arg);
    n->shape = Py_NewRef(shape);
    n->dtype = Py_NewRef(dtype);
    n->guards = guards;
    n->size = size;
    n->buffer = Py_NewRef(Py_None);
    n->host = Py_NewRef(host);
    n->device = Py_NewRef(device);
    n->lineage = Py_NewRef(Py_None);
    n->origin = Py_NewRef(Py_None);
    n->weight = Py_NewRef(one);
    n->merged = Py_NewRef(Py_None);
    return (PyObject *)n;
}

/* Node(op, srcs, arg, shape, dtype, host=None, device=None) */
static PyObject *node_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {"op", "srcs", "arg", "shape", "dtype", "host", "device", NULL};
    PyObject *op, *srcs, *arg, *shape, *dtype, *host = Py_None, *device = Py_None;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 5) {  /* the usual call: no parsing */
        op = PyTuple_GET_ITEM(args, 0);
        srcs = PyTuple_GET_ITEM(args, 1);
        arg = PyTuple_GET_ITEM(args, 2);
        shape = PyTuple_GET_ITEM(args, 3);
        dtype = PyTuple_GET_ITEM(args, 4);
    } else if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOO|OO:Node", names, &op, &srcs, &arg, &shape, &dtype,
                                            &host, &device)) {
        return NULL;
    }
    return make_node(type, op, srcs, arg, shape, dtype, host, device);
}

static int node_traverse(NodeObject *n, visitproc visit, void *arg) {
    Py_VISIT(n->id);
    Py_VISIT(n->op);
    Py_VISIT(n->srcs);
    Py_VISIT(n->arg);
    Py_VISIT(n->shape);
    Py_VISIT(n->dtype);
    Py_VISIT(n->guards);
    Py_VISIT(n->size);
    Py_VISIT(n->buffer);
    Py_VISIT(n->host);
    Py_VISIT(n->device);
    Py_VISIT(n->lineage);
    Py_VISIT(n->origin);
    Py_VISIT(n->weight);
    Py_VISIT(n->merged);
    return 0;
}

static int node_clear(NodeObject *n) {
    Py_CLEAR(n->id);
    Py_CLEAR(n->op);
    Py_CLEAR(n->srcs);
    Py_CLEAR(n->arg);
    Py_CLEAR(n->shape);
    Py_CLEAR(n->dtype);
    Py_CLEAR(n->guards);
    Py_CLEAR(n->size);
    Py_CLEAR(n->buffer);
    Py_CLEAR(n->host);
    Py_CLEAR(n->device);
    Py_CLEAR(n->lineage);
    Py_CLEAR(n->origin);
    Py_CLEAR(n->weight);
    Py_CLEAR(n->merged);
    return 0;
}

/* Freeing the head of a long chain frees its sources in turn: the trashcan keeps that from nesting C calls as deep
 * as the chain (ir.Node is a Python subclass, whose own deallocation does the same; this covers direct use). */
static void node_dealloc(NodeObject *n) {
    PyObject_GC_UnTrack(n);
    Py_TRASHCAN_BEGIN(n, node_dealloc)
    if (n->weakrefs != NULL) PyObject_ClearWeakRefs((PyObject *)n);
    node_clear(n);
    Py_TYPE(n)->tp_free((PyObject *)n);
    Py_TRASHCAN_END
}

/* node.become_leaf(buffer) (node.py's _NodeMethods.become_leaf): every realize makes its results leaves. The old
 * fields are released last, so a history freed by it sees the node already a leaf. */
static PyObject *node_become_leaf(NodeObject *n, PyObject *buffer) {
    if (op_leaf == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "graph._node: configure() first");
        return NULL;
    }
    PyObject *op = n->op, *srcs = n->srcs, *arg = n->arg, *old = n->buffer, *host = n->host, *guards = n->guards;
    n->op = Py_NewRef(op_leaf);
    n->srcs = PyTuple_New(0);
    n->arg = Py_NewRef(Py_None);
    n->buffer = Py_NewRef(buffer);
    n->host = Py_NewRef(Py_None);
    n->guards = Py_NewRef(Py_None);
    Py_XDECREF(op);
    Py_XDECREF(srcs);
    Py_XDECREF(arg);
    Py_XDECREF(old);
    Py_XDECREF(host);
    Py_XDECREF(guards);
    Py_RETURN_NONE;
}

static PyMethodDef node_methods[] = {
    {"become_leaf", (PyCFunction)node_become_leaf, METH_O,
     "Turn a computed node into a realized leaf holding `buffer` (node.py's become_leaf in C)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zyx_dist.graph._node.NodeBase",
    .tp_doc = "The fields of graph/ir.py's Node (its base type where this extension is built).",
    .tp_basicsize = sizeof(NodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = node_new,
    .tp_dealloc = (destructor)node_dealloc,
    .tp_traverse = (traverseproc)node_traverse,
    .tp_clear = (inquiry)node_clear,
    .tp_weaklistoffset = offsetof(NodeObject, weakrefs),
    .tp_members = node_members,
    .tp_methods = node_methods,
};


/* ---- the constructors' usual cases ------------------------------------------------------------------------ */

#define MAXDIMS 64

static int is_node(PyObject *x) { return PyObject_TypeCheck(x, &NodeType); }
#define F(x, name) (((NodeObject *)(x))->name)

/* The dims of a tuple of exact non-negative ints into dims (at most MAXDIMS): their count, or -1 where it is
 * something else, which the Python function takes (no error is set). */
static int int_dims(PyObject *t, long long *dims) {
    if (t == NULL || !PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) > MAXDIMS) return -1;
    int n = (int)PyTuple_GET_SIZE(t);
    for (int i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(t, i);
        int overflow;
        if (!PyLong_CheckExact(d)) return -1;
        long long v = PyLong_AsLongLongAndOverflow(d, &overflow);
        if (overflow || v < 0) return -1;
        dims[i] = v;
    }
    return n;
}

static int same_dims(const long long *a, int na, const long long *b, int nb) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* The kind of a dtype, KIND_UNKNOWN for one configure_constructors was not given. */
static int kind_of(PyObject *dtype) {
    for (int i = 0; i < ndtypes; i++)
        if (dtypes[i] == dtype) return dtype_kinds[i];
    return KIND_UNKNOWN;
}

/* A node's only source where its fields are as a view's are made (a tuple of one node), else NULL. */
static PyObject *only_source(PyObject *x) {
    PyObject *srcs = F(x, srcs);
    if (srcs == NULL || !PyTuple_CheckExact(srcs) || PyTuple_GET_SIZE(srcs) != 1) return NULL;
    PyObject *s = PyTuple_GET_ITEM(srcs, 0);
    return is_node(s) ? s : NULL;
}

/* ir.TRACKING.views, as ir.track_views sets it: merged views record what they were built on (ir.py's `_merged`). */
static int views_tracked = 1;

/* A new node of ir.Node of one source `x` (borrowed). */
static PyObject *view_node(PyObject *op, PyObject *x, PyObject *arg, PyObject *shape, PyObject *dtype) {
    PyObject *srcs = PyTuple_Pack(1, x);
    if (srcs == NULL) return NULL;
    PyObject *n = make_node(node_class, op, srcs, arg, shape, dtype, Py_None, Py_None);
    Py_DECREF(srcs);
    return n;
}

/* `out` (a new reference, or NULL) built as op(view, arg) on view's source: with its record, while views are tracked
 * (ir.py's `_merged`). */
static PyObject *merged_node(PyObject *out, PyObject *op, PyObject *arg, PyObject *view) {
    if (out == NULL || !views_tracked) return out;
    PyObject *record = PyTuple_Pack(3, op, arg, view);
    if (record == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    Py_SETREF(((NodeObject *)out)->merged, record);
    return out;
}

/* op(view, arg) where it cancels `view`, whose source is `src` (ir.py's `_kept`): src, or while views are tracked an
 * identity reshape of src that records it. */
static PyObject *kept_node(PyObject *op, PyObject *arg, PyObject *view, PyObject *src) {
    if (!views_tracked) return Py_NewRef(src);
    return merged_node(view_node(op_reshape, src, F(src, shape), F(src, shape), F(src, dtype)), op, arg, view);
}

static PyObject *c_track_views(PyObject *self, PyObject *on) {
    int was = views_tracked;
    views_tracked = PyObject_IsTrue(on);
    if (views_tracked < 0) {
        views_tracked = was;
        return NULL;
    }
    return PyBool_FromLong(was);
}

#define FALLBACK(fn) return PyObject_Vectorcall(fn, args, nargs, NULL)
#define CONFIGURED(fn) \
    if (fn == NULL) { \
        PyErr_SetString(PyExc_RuntimeError, "zyx_dist.graph._node's constructors are not configured"); \
        return NULL; \
    }

/* ir.reshape(x, shape): a reshape of a reshape reshapes its source (and records it, ir.py's `_merged`); a constant,
 * an error and a shape of other than exact ints go to Python. */
static PyObject *c_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_reshape)
    long long dims[MAXDIMS], have[MAXDIMS];
    if (nargs != 2 || !is_node(args[0])) FALLBACK(py_reshape);
    PyObject *x = args[0], *shape = args[1];
    int n = int_dims(shape, dims), nx = int_dims(F(x, shape), have);
    if (n < 0 || nx < 0 || F(x, op) == NULL) FALLBACK(py_reshape);
    long long size = 1, xsize = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(size, dims[i], &size)) FALLBACK(py_reshape);
    for (int i = 0; i < nx; i++)
        if (__builtin_mul_overflow(xsize, have[i], &xsize)) FALLBACK(py_reshape);
    if (size != xsize) FALLBACK(py_reshape);  /* (the error) */
    if (same_dims(dims, n, have, nx)) return Py_NewRef(x);
    if (F(x, op) == op_const) FALLBACK(py_reshape);
    if (F(x, op) == op_reshape) {
        PyObject *src = only_source(x);
        if (src == NULL) FALLBACK(py_reshape);
        int ns = int_dims(F(src, shape), have);
        if (ns < 0) FALLBACK(py_reshape);
        if (same_dims(dims, n, have, ns)) return kept_node(op_reshape, shape, x, src);
        return merged_node(view_node(op_reshape, src, shape, shape, F(x, dtype)), op_reshape, shape, x);
    }
    return view_node(op_reshape, x, shape, shape, F(x, dtype));
}

/* ir.expand(x, shape): an expand of an expand expands its source (and records it); a constant, an empty result, an
 * error and a shape of other than exact ints go to Python. */
static PyObject *c_expand(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_expand)
    long long dims[MAXDIMS], have[MAXDIMS];
    if (nargs != 2 || !is_node(args[0])) FALLBACK(py_expand);
    PyObject *x = args[0], *shape = args[1];
    int n = int_dims(shape, dims), nx = int_dims(F(x, shape), have);
    if (n < 0 || nx != n || F(x, op) == NULL) FALLBACK(py_expand);
    int same = 1;
    for (int i = 0; i < n; i++) {
        if (have[i] != dims[i]) {
            if (have[i] != 1) FALLBACK(py_expand);  /* (the error) */
            same = 0;
        }
        if (dims[i] == 0) FALLBACK(py_expand);  /* (an empty result is a constant) */
    }
    if (same) return Py_NewRef(x);
    if (F(x, op) == op_const) FALLBACK(py_expand);
    if (F(x, op) == op_expand) {
        PyObject *src = only_source(x);
        if (src == NULL) FALLBACK(py_expand);
        return merged_node(view_node(op_expand, src, shape, shape, F(x, dtype)), op_expand, shape, x);
    }
    return view_node(op_expand, x, shape, shape, F(x, dtype));
}

/* ir.permute(x, axes): a permute of a permute composes the two (and records it); a constant, an error and axes of
 * other than exact ints go to Python. */
static PyObject *c_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_permute)
    long long axes[MAXDIMS], have[MAXDIMS], inner[MAXDIMS];
    char seen[MAXDIMS] = {0};
    if (nargs != 2 || !is_node(args[0])) FALLBACK(py_permute);
    PyObject *x = args[0], *given = args[1];
    int n = int_dims(given, axes), nx = int_dims(F(x, shape), have);
    if (n < 0 || nx != n || F(x, op) == NULL) FALLBACK(py_permute);
    int identity = 1;
    for (int i = 0; i < n; i++) {
        if (axes[i] >= n || seen[axes[i]]) FALLBACK(py_permute);  /* (the error) */
        seen[axes[i]] = 1;
        identity &= axes[i] == i;
    }
    if (identity) return Py_NewRef(x);
    if (F(x, op) == op_const) FALLBACK(py_permute);
    PyObject *src = NULL;
    if (F(x, op) == op_permute) {  /* compose: x's source is no permute (they compose as built) */
        src = only_source(x);
        if (src == NULL || int_dims(F(x, arg), inner) != n) FALLBACK(py_permute);
        identity = 1;
        for (int i = 0; i < n; i++) identity &= inner[axes[i]] == i;
        if (identity) return kept_node(op_permute, given, x, src);
    }
    PyObject *shape = PyTuple_New(n);
    if (shape == NULL) return NULL;
    for (int i = 0; i < n; i++) PyTuple_SET_ITEM(shape, i, Py_NewRef(PyTuple_GET_ITEM(F(x, shape), axes[i])));
    PyObject *result = NULL;
    if (src == NULL) {
        result = view_node(op_permute, x, given, shape, F(x, dtype));
    } else {
        PyObject *composed = PyTuple_New(n);
        if (composed != NULL) {
            for (int i = 0; i < n; i++) PyTuple_SET_ITEM(composed, i, Py_NewRef(PyTuple_GET_ITEM(F(x, arg), axes[i])));
            result = merged_node(view_node(op_permute, src, composed, shape, F(x, dtype)), op_permute, given, x);
            Py_DECREF(composed);
        }
    }
    Py_DECREF(shape);
    return result;
}

/* ir.cast(x, dtype): a constant goes to Python. */
static PyObject *c_cast(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_cast)
    if (nargs != 2 || !is_node(args[0]) || F(args[0], op) == NULL || F(args[0], op) == op_const) FALLBACK(py_cast);
    PyObject *x = args[0], *dtype = args[1];
    if (dtype == F(x, dtype)) return Py_NewRef(x);
    return view_node(op_cast, x, dtype, F(x, shape), dtype);
}

/* The dtype of an operator's result by its rule (borrowed), or NULL where the Python function decides (an error,
 * a rule or dtype not configured). */
static PyObject *result_dtype(PyObject *rules, PyObject *op, PyObject *dtype) {
    PyObject *rule = PyDict_GetItemWithError(rules, op);
    if (rule == NULL) {
        PyErr_Clear();
        return NULL;
    }
    int kind = kind_of(dtype);
    if (kind == KIND_UNKNOWN) return NULL;
    switch (PyLong_AsLong(rule)) {
    case RULE_ANY: return dtype;
    case RULE_BOOL_RESULT: return bool_dtype;
    case RULE_FLOAT_ONLY: return kind == KIND_FLOAT ? dtype : NULL;
    case RULE_NOT_BOOL: return kind != KIND_BOOL ? dtype : NULL;
    case RULE_NOT_FLOAT: return kind != KIND_FLOAT ? dtype : NULL;
    default: PyErr_Clear(); return NULL;
    }
}

/* ir.unary(op, x): an error goes to Python. */
static PyObject *c_unary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_unary)
    if (nargs != 2 || !is_node(args[1]) || F(args[1], dtype) == NULL || F(args[1], shape) == NULL) FALLBACK(py_unary);
    PyObject *op = args[0], *x = args[1], *dtype = result_dtype(unary_rules, op, F(x, dtype));
    if (dtype == NULL) FALLBACK(py_unary);
    return view_node(op_unary, x, op, F(x, shape), dtype);
}

/* ir.binary(op, x, y): an error goes to Python. */
static PyObject *c_binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_binary)
    if (nargs != 3 || !is_node(args[1]) || !is_node(args[2])) FALLBACK(py_binary);
    PyObject *op = args[0], *x = args[1], *y = args[2];
    if (F(x, dtype) == NULL || F(x, dtype) != F(y, dtype) || F(x, shape) == NULL || F(y, shape) == NULL)
        FALLBACK(py_binary);
    if (F(x, shape) != F(y, shape)) {
        int eq = PyObject_RichCompareBool(F(x, shape), F(y, shape), Py_EQ);
        if (eq < 0) return NULL;
        if (!eq) FALLBACK(py_binary);
    }
    PyObject *dtype = result_dtype(binary_rules, op, F(x, dtype));
    if (dtype == NULL) FALLBACK(py_binary);
    PyObject *srcs = PyTuple_Pack(2, x, y);
    if (srcs == NULL) return NULL;
    PyObject *n = make_node(node_class, op_binary, srcs, op, F(x, shape), dtype, Py_None, Py_None);
    Py_DECREF(srcs);
    return n;
}

/* frontend/common.py broadcast_shapes(*shapes), two shapes of exact ints: NumPy's broadcast, right-aligned (an
 * error, and any other number of shapes, go to Python). */
static PyObject *c_broadcast(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_broadcast)
    long long a[MAXDIMS], b[MAXDIMS];
    if (nargs != 2) FALLBACK(py_broadcast);
    int na = int_dims(args[0], a), nb = int_dims(args[1], b);
    if (na < 0 || nb < 0) FALLBACK(py_broadcast);
    if (same_dims(a, na, b, nb)) return Py_NewRef(args[0]);
    int n = na > nb ? na : nb;
    PyObject *out = PyTuple_New(n);
    if (out == NULL) return NULL;
    for (int i = 1; i <= n; i++) {  /* from the right; each dim the int object of the operand it comes from */
        long long da = i <= na ? a[na - i] : 1, db = i <= nb ? b[nb - i] : 1;
        PyObject *d;
        if (db == 1 || db == da) d = i <= na ? PyTuple_GET_ITEM(args[0], na - i) : PyTuple_GET_ITEM(args[1], nb - i);
        else if (da == 1) d = PyTuple_GET_ITEM(args[1], nb - i);
        else {
            Py_DECREF(out);
            FALLBACK(py_broadcast);  /* (the error) */
        }
        PyTuple_SET_ITEM(out, n - i, Py_NewRef(d));
    }
    return out;
}

static PyObject *configure_broadcast(PyObject *self, PyObject *fn) {
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "configure_broadcast(broadcast_shapes): a callable");
        return NULL;
    }
    Py_XSETREF(py_broadcast, Py_NewRef(fn));
    Py_RETURN_NONE;
}


/* ---- the tensor layer's binary op (frontend/elementwise.py `_binary`) ---------------------------------------- */

/* `n` as an operand of `shape` (common.to_node without the cast, its dtype being the op's): leading 1s, then the
 * expand, each by its constructor above (which hand a constant's fold to Python). A new reference. */
static PyObject *operand_node(PyObject *n, PyObject *shape) {
    PyObject *have = F(n, shape);
    if (have == shape) return Py_NewRef(n);
    int eq = PyObject_RichCompareBool(have, shape, Py_EQ);
    if (eq < 0) return NULL;
    if (eq) return Py_NewRef(n);
    Py_ssize_t k = PyTuple_GET_SIZE(shape) - PyTuple_GET_SIZE(have);
    PyObject *x = Py_NewRef(n);
    if (k > 0) {
        PyObject *padded = PyTuple_New(PyTuple_GET_SIZE(shape));
        if (padded == NULL) {
            Py_DECREF(x);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++)
            PyTuple_SET_ITEM(padded, i, Py_NewRef(i < k ? one : PyTuple_GET_ITEM(have, i - k)));
        PyObject *args[2] = {x, padded};
        Py_SETREF(x, c_reshape(NULL, args, 2));
        Py_DECREF(padded);
        if (x == NULL) return NULL;
    }
    PyObject *args[2] = {x, shape};
    PyObject *out = c_expand(NULL, args, 2);
    Py_DECREF(x);
    return out;
}

/* The shared constant node of scalar `c` (common.scalar_const): from its dict, or made by it. A new reference.
 * The key holds the dtype's id, as common.scalar_const's does (dtypes are unique; their hash is Python code). */
static PyObject *scalar_node(PyObject *c, PyObject *shape, PyObject *dtype) {
    PyObject *dtype_id = PyLong_FromVoidPtr(dtype);
    if (dtype_id == NULL) return NULL;
    PyObject *key = PyTuple_Pack(4, (PyObject *)Py_TYPE(c), c, shape, dtype_id);
    Py_DECREF(dtype_id);
    if (key == NULL) return NULL;
    PyObject *n = PyDict_GetItemWithError(scalar_consts, key);
    Py_DECREF(key);
    if (n != NULL && is_node(n) && F(n, op) == op_const) return Py_NewRef(n);
    if (PyErr_Occurred()) return NULL;
    return PyObject_CallFunctionObjArgs(py_scalar_const, c, shape, dtype, NULL);
}

static PyObject *node_of(PyObject *t) { return *(PyObject **)((char *)t + off_tensor_node); }

/* elementwise._binary(op, a, b, dtype=None): two tensors of one dtype, or a float tensor and a Python int or float,
 * bool excluded (its + and * are other ops); `dtype` only `_to_float` with float operands. Anything else, and any
 * error, goes to Python. */
static PyObject *c_tensor_binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    CONFIGURED(py_tensor_binary)
    int float_only = 0;
    if (kwnames != NULL || nargs < 3 || nargs > 4) goto fallback;
    if (nargs == 4) {
        if (args[3] == to_float) float_only = 1;
        else if (args[3] != Py_None) goto fallback;
    }
    PyObject *op = args[0], *a = args[1], *b = args[2], *x = NULL, *y = NULL;
    int ta = Py_IS_TYPE(a, tensor_class), tb = Py_IS_TYPE(b, tensor_class);
    PyObject *na = ta ? node_of(a) : NULL, *nb = tb ? node_of(b) : NULL;
    if ((na != NULL && (!is_node(na) || F(na, dtype) == NULL || F(na, shape) == NULL || !PyTuple_CheckExact(F(na, shape)))) ||
        (nb != NULL && (!is_node(nb) || F(nb, dtype) == NULL || F(nb, shape) == NULL || !PyTuple_CheckExact(F(nb, shape)))))
        goto fallback;
    PyObject *dtype, *shape;
    if (na != NULL && nb != NULL) {
        dtype = F(na, dtype);
        if (F(nb, dtype) != dtype) goto fallback;
    } else if (na != NULL || nb != NULL) {
        PyObject *c = na != NULL ? b : a;
        if (!PyFloat_CheckExact(c) && !PyLong_CheckExact(c)) goto fallback;
        dtype = F(na != NULL ? na : nb, dtype);
        if (kind_of(dtype) != KIND_FLOAT) goto fallback;  /* (a float tensor keeps its dtype with any int or float) */
    } else {
        goto fallback;
    }
    int kind = kind_of(dtype);
    if (kind != KIND_INT && kind != KIND_FLOAT) goto fallback;
    if (float_only && kind != KIND_FLOAT) goto fallback;
    PyObject *result = result_dtype(binary_rules, op, dtype);
    if (result == NULL) goto fallback;
    if (na != NULL && nb != NULL) {
        PyObject *pair[2] = {F(na, shape), F(nb, shape)};
        shape = pair[0] == pair[1] ? Py_NewRef(pair[0]) : c_broadcast(NULL, pair, 2);
        if (shape == NULL) goto fallback_clear;  /* (shapes that do not broadcast: Python raises) */
        x = operand_node(na, shape);
        y = x != NULL ? operand_node(nb, shape) : NULL;
    } else {
        shape = Py_NewRef(F(na != NULL ? na : nb, shape));
        x = na != NULL ? Py_NewRef(na) : scalar_node(a, shape, dtype);
        y = x == NULL ? NULL : nb != NULL ? Py_NewRef(nb) : scalar_node(b, shape, dtype);
    }
    Py_DECREF(shape);
    if (y == NULL) {
        Py_XDECREF(x);
        return NULL;
    }
    PyObject *srcs = PyTuple_Pack(2, x, y), *n = NULL;
    Py_DECREF(x);
    Py_DECREF(y);
    if (srcs == NULL) return NULL;
    n = make_node(node_class, op_binary, srcs, op, F(PyTuple_GET_ITEM(srcs, 0), shape), result, Py_None, Py_None);
    Py_DECREF(srcs);
    if (n == NULL) return NULL;
    PyObject *t = tensor_class->tp_alloc(tensor_class, 0);
    if (t == NULL) {
        Py_DECREF(n);
        return NULL;
    }
    *(PyObject **)((char *)t + off_tensor_node) = n;
    return t;
fallback_clear:
    PyErr_Clear();
fallback:
    return PyObject_Vectorcall(py_tensor_binary, args, nargs, kwnames);
}

static PyObject *configure_frontend(PyObject *self, PyObject *args) {
    PyObject *cls, *consts, *make_const, *float_fn, *binary_fn, *d;
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyType_Type, &cls, &PyDict_Type, &consts, &make_const, &float_fn,
                          &binary_fn))
        return NULL;
    d = PyObject_GetAttrString(cls, "node");
    if (d == NULL) return NULL;
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
    if (ok) off_tensor_node = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "configure_frontend: Tensor.node is not a slot");
        return NULL;
    }
    Py_XSETREF(tensor_class, (PyTypeObject *)Py_NewRef(cls));
    Py_XSETREF(scalar_consts, Py_NewRef(consts));
    Py_XSETREF(py_scalar_const, Py_NewRef(make_const));
    Py_XSETREF(to_float, Py_NewRef(float_fn));
    Py_XSETREF(py_tensor_binary, Py_NewRef(binary_fn));
    Py_RETURN_NONE;
}

static PyObject *configure_constructors(PyObject *self, PyObject *args) {
    PyObject *cls, *ops, *urules, *brules, *kinds, *booltype, *fallbacks;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OO!", &PyType_Type, &cls, &PyTuple_Type, &ops, &PyDict_Type, &urules,
                          &PyDict_Type, &brules, &PyTuple_Type, &kinds, &booltype, &PyTuple_Type, &fallbacks))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)cls, &NodeType) || PyTuple_GET_SIZE(ops) != 7 ||
        PyTuple_GET_SIZE(fallbacks) != 6 || PyTuple_GET_SIZE(kinds) > DTYPES) {
        PyErr_SetString(PyExc_TypeError, "configure_constructors(Node, 7 ops, unary rules, binary rules, "
                                         "(dtype, kind) pairs, bool, 6 Python functions)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kinds); i++) {
        PyObject *pair = PyTuple_GET_ITEM(kinds, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "dtype kinds: (dtype, kind) pairs");
            return NULL;
        }
        int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
        if (kind == -1 && PyErr_Occurred()) return NULL;
        Py_XSETREF(dtypes[i], Py_NewRef(PyTuple_GET_ITEM(pair, 0)));
        dtype_kinds[i] = kind;
    }
    ndtypes = (int)PyTuple_GET_SIZE(kinds);
    Py_XSETREF(node_class, (PyTypeObject *)Py_NewRef(cls));
    PyObject **op_slots[] = {&op_const, &op_reshape, &op_expand, &op_permute, &op_cast, &op_unary, &op_binary};
    for (int i = 0; i < 7; i++) Py_XSETREF(*op_slots[i], Py_NewRef(PyTuple_GET_ITEM(ops, i)));
    PyObject **fn_slots[] = {&py_reshape, &py_expand, &py_permute, &py_cast, &py_unary, &py_binary};
    for (int i = 0; i < 6; i++) Py_XSETREF(*fn_slots[i], Py_NewRef(PyTuple_GET_ITEM(fallbacks, i)));
    Py_XSETREF(unary_rules, Py_NewRef(urules));
    Py_XSETREF(binary_rules, Py_NewRef(brules));
    Py_XSETREF(bool_dtype, Py_NewRef(booltype));
    Py_RETURN_NONE;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *counter, *merge, *leaf;
    if (!PyArg_ParseTuple(args, "OOO", &counter, &merge, &leaf)) return NULL;
    if (Py_TYPE(counter)->tp_iternext == NULL || !PyCallable_Check(merge)) {
        PyErr_SetString(PyExc_TypeError, "configure(ids, merged_guards, Op.LEAF): an iterator, a callable, an op");
        return NULL;
    }
    Py_XSETREF(ids, Py_NewRef(counter));
    Py_XSETREF(merge_guards, Py_NewRef(merge));
    Py_XSETREF(op_leaf, Py_NewRef(leaf));
    Py_RETURN_NONE;
}

#include "_node_contract.c"  /* reduce and matmul of nodes: they use this file's type, constructors and state */

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(ids, merged_guards, Op.LEAF): node._ids, node.merged_guards, the leaf op."},
    {"configure_constructors", configure_constructors, METH_VARARGS,
     "configure_constructors(Node, (CONST, RESHAPE, EXPAND, PERMUTE, CAST, UNARY, BINARY), unary rules, binary rules, "
     "((dtype, kind), ...), bool_, (reshape, expand, permute, cast, unary, binary))."},
    {"track_views", (PyCFunction)c_track_views, METH_O,
     "track_views(on): whether merged views record what they were built on (ir.track_views); the old setting."},
    {"reshape", (PyCFunction)(void (*)(void))c_reshape, METH_FASTCALL, "ir.reshape's usual case."},
    {"expand", (PyCFunction)(void (*)(void))c_expand, METH_FASTCALL, "ir.expand's usual case."},
    {"permute", (PyCFunction)(void (*)(void))c_permute, METH_FASTCALL, "ir.permute's usual case."},
    {"cast", (PyCFunction)(void (*)(void))c_cast, METH_FASTCALL, "ir.cast's usual case."},
    {"unary", (PyCFunction)(void (*)(void))c_unary, METH_FASTCALL, "ir.unary's usual case."},
    {"binary", (PyCFunction)(void (*)(void))c_binary, METH_FASTCALL, "ir.binary's usual case."},
    {"configure_broadcast", configure_broadcast, METH_O, "configure_broadcast(common.broadcast_shapes)."},
    {"configure_frontend", configure_frontend, METH_VARARGS,
     "configure_frontend(Tensor, common._SCALAR_CONSTS, common.scalar_const, elementwise._to_float, elementwise._binary)."},
    {"tensor_binary", (PyCFunction)(void (*)(void))c_tensor_binary, METH_FASTCALL | METH_KEYWORDS,
     "elementwise._binary's usual cases."},
    {"reduce", (PyCFunction)(void (*)(void))c_reduce, METH_FASTCALL, "ir.reduce's usual case."},
    {"matmul_nodes", (PyCFunction)(void (*)(void))c_matmul_nodes, METH_FASTCALL,
     "linalg._matmul_nodes: x @ y of two nodes as linalg.py builds it, or None."},
    {"configure_contract", configure_contract, METH_VARARGS,
     "configure_contract(ir.__dict__, Op.REDUCE, ReduceOp.SUM, BinaryOp.MUL, python_reduce)."},
    {"broadcast_shapes", (PyCFunction)(void (*)(void))c_broadcast, METH_FASTCALL,
     "common.broadcast_shapes of two shapes of exact ints."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_node", NULL, -1, methods};

PyMODINIT_FUNC PyInit__node(void) {
    one = PyLong_FromLong(1);
    if (one == NULL || PyType_Ready(&NodeType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "NodeBase", (PyObject *)&NodeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
