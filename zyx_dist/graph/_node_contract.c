/* Driver side: graph/ir.py's `reduce` and frontend/linalg.py's matmul of two nodes (`_matmul_nodes`), their usual
 * cases in C. A matmul builds five views, a product and a reduce; in Python that was most of a small training step's
 * graph build (the step `relu(y @ w + b)`: ~350 of its ~430 bytecodes). Takes and gives what the Python functions
 * do, and hands every other case to them: `reduce` any reduce that ir.py's split rules may rewrite (they are read at
 * each call from ir.py's module: sessions set SPLIT_K, and tests change the thresholds), an axis that is not one
 * exact int, an empty or out-of-range one; `matmul_nodes` gives None where linalg.py's general path must decide
 * (dtypes that differ or are bool, batch dims that do not broadcast, an empty result, fewer than two dims).
 * Compiled as part of _node.c (included at its end), whose node type, constructors and configured state it uses.
 */

/* Set by configure_contract: ir.py's module dict, Op.REDUCE, ReduceOp.SUM, BinaryOp.MUL and the Python forms. */
static PyObject *ir_globals, *op_reduce, *reduce_sum, *binary_mul, *py_reduce;
static PyObject *s_split_k, *s_split_k_at, *s_split_reduce_at;

/* An int setting of ir.py (`name`): into *v; -1 with an error set where it is missing or not an int. */
static int ir_setting(PyObject *name, long long *v) {
    PyObject *value = PyDict_GetItemWithError(ir_globals, name);
    if (value == NULL) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "graph/ir.py has no %U", name);
        return -1;
    }
    int overflow;
    *v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (*v == -1 && PyErr_Occurred()) return -1;
    if (overflow) *v = overflow > 0 ? LLONG_MAX : LLONG_MIN;
    return 0;
}

/* ir.reduce(op, x, axes), one axis that no split rule takes: Node(REDUCE, (x,), (op, axes), shape, x.dtype). */
static PyObject *c_reduce(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_reduce)
    long long dims[MAXDIMS], split_reduce_at, split_k, split_k_at;
    if (nargs != 3 || !is_node(args[1])) FALLBACK(py_reduce);
    PyObject *op = args[0], *x = args[1], *axes = args[2];
    if (!PyTuple_CheckExact(axes) || PyTuple_GET_SIZE(axes) != 1 || !PyLong_CheckExact(PyTuple_GET_ITEM(axes, 0)))
        FALLBACK(py_reduce);
    int n = int_dims(F(x, shape), dims);
    long long a = PyLong_AsLongLong(PyTuple_GET_ITEM(axes, 0));
    if (a == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        FALLBACK(py_reduce);
    }
    if (n < 0 || a < 0 || a >= n || dims[a] == 1) FALLBACK(py_reduce);  /* (the error, or x itself) */
    long long size = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(size, dims[i], &size)) FALLBACK(py_reduce);
    if (size == 0) FALLBACK(py_reduce);  /* (a constant) */
    long long length = dims[a], outputs = size / length;
    if (ir_setting(s_split_reduce_at, &split_reduce_at) < 0 || ir_setting(s_split_k, &split_k) < 0 ||
        ir_setting(s_split_k_at, &split_k_at) < 0)
        return NULL;
    if (length >= split_reduce_at && outputs <= 16) FALLBACK(py_reduce);
    if (split_k && (a == 0 || (op == reduce_sum && length >= split_k_at))) FALLBACK(py_reduce);
    PyObject *shape = PyTuple_New(n), *arg = NULL, *srcs = NULL, *result = NULL;
    if (shape == NULL) return NULL;
    for (int i = 0; i < n; i++)
        PyTuple_SET_ITEM(shape, i, i == a ? PyLong_FromLong(1) : Py_NewRef(PyTuple_GET_ITEM(F(x, shape), i)));
    arg = PyTuple_Pack(2, op, axes);
    srcs = PyTuple_Pack(1, x);
    if (arg != NULL && srcs != NULL) result = make_node(node_class, op_reduce, srcs, arg, shape, F(x, dtype), Py_None,
                                                        Py_None);
    Py_DECREF(shape);
    Py_XDECREF(arg);
    Py_XDECREF(srcs);
    return result;
}

/* A tuple of the ints in dims (new ints; a shape or axes argument). */
static PyObject *int_tuple(const long long *dims, int n) {
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *d = PyLong_FromLongLong(dims[i]);
        if (d == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* One of this file's constructors on two arguments (a node and a tuple that it borrows): a new reference. */
static PyObject *call2(PyObject *(*fn)(PyObject *, PyObject *const *, Py_ssize_t), PyObject *x, PyObject *arg) {
    PyObject *args[2] = {x, arg};
    return fn(NULL, args, 2);
}

/* `x` (a new reference, stolen) reshaped to `shape` (borrowed). */
static PyObject *reshaped(PyObject *x, PyObject *shape) {
    if (x == NULL || shape == NULL) {
        Py_XDECREF(x);
        return NULL;
    }
    PyObject *r = call2(c_reshape, x, shape);
    Py_DECREF(x);
    return r;
}

/* `x` (a new reference, stolen) with leading 1s to `n` dims, then expanded to `full` (dims and their tuple). */
static PyObject *widened(PyObject *x, const long long *full, int n, PyObject *full_shape) {
    long long dims[MAXDIMS], lead[MAXDIMS];
    if (x == NULL) return NULL;
    int nx = int_dims(F(x, shape), dims);
    if (nx < 0) {
        Py_DECREF(x);
        PyErr_SetString(PyExc_RuntimeError, "matmul_nodes: a view's shape is not a tuple of ints");
        return NULL;
    }
    if (nx < n) {
        for (int i = 0; i < n; i++) lead[i] = i < n - nx ? 1 : dims[i - (n - nx)];
        PyObject *shape = int_tuple(lead, n);
        x = reshaped(x, shape);
        Py_XDECREF(shape);
        if (x == NULL) return NULL;
    }
    PyObject *e = call2(c_expand, x, full_shape);
    Py_DECREF(x);
    return e;
}

/* linalg._matmul_nodes(x, y): x @ y for nodes of two dims or more as linalg.py builds it (x as (..., M, 1, K), y
 * transposed as (..., 1, N, K), their product summed over K, reshaped to (batch..., M, N)), or None. */
static PyObject *c_matmul_nodes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CONFIGURED(py_reduce)
    long long xs[MAXDIMS], ys[MAXDIMS], d[MAXDIMS], full[MAXDIMS];
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "matmul_nodes(x, y): two nodes");
        return NULL;
    }
    PyObject *x = args[0], *y = args[1];
    if (!is_node(x) || !is_node(y)) Py_RETURN_NONE;
    int xn = int_dims(F(x, shape), xs), yn = int_dims(F(y, shape), ys);
    if (xn < 2 || yn < 2 || xn > MAXDIMS - 2 || yn > MAXDIMS - 2 || xs[xn - 1] != ys[yn - 2]) Py_RETURN_NONE;
    if (F(x, dtype) != F(y, dtype) || kind_of(F(x, dtype)) == KIND_BOOL || kind_of(F(x, dtype)) == KIND_UNKNOWN)
        Py_RETURN_NONE;
    long long k = xs[xn - 1], m = xs[xn - 2], n = ys[yn - 1];
    /* the batch dims broadcast, and the result's shape */
    int nb = (xn > yn ? xn : yn) - 2;
    long long out[MAXDIMS];
    for (int i = 1; i <= nb; i++) {
        long long a = i <= xn - 2 ? xs[xn - 2 - i] : 1, b = i <= yn - 2 ? ys[yn - 2 - i] : 1;
        if (a != b && a != 1 && b != 1) Py_RETURN_NONE;  /* (linalg.py names the operands) */
        out[nb - i] = a == 1 ? b : a;
    }
    out[nb] = m;
    out[nb + 1] = n;
    int empty = k == 0;
    for (int i = 0; i < nb + 2; i++) empty |= out[i] == 0;
    if (empty) Py_RETURN_NONE;  /* (an empty product: the general path) */
    /* (*xs[:-1], 1, K) and (*ys[:-2], 1, N, K), broadcast to `full` */
    int nf = nb + 3;
    for (int i = 0; i < nf; i++) full[i] = i < nb ? out[i] : i == nb ? m : i == nb + 1 ? n : k;
    for (int i = 0; i < yn; i++) d[i] = i < yn - 2 ? i : i == yn - 2 ? yn - 1 : yn - 2;
    PyObject *perm = int_tuple(d, yn), *yt = perm == NULL ? NULL : call2(c_permute, y, perm);
    Py_XDECREF(perm);
    for (int i = 0; i < xn + 1; i++) d[i] = i < xn - 1 ? xs[i] : i == xn - 1 ? 1 : k;
    PyObject *xshape = int_tuple(d, xn + 1), *xr = xshape == NULL ? NULL : call2(c_reshape, x, xshape);
    Py_XDECREF(xshape);
    for (int i = 0; i < yn + 1; i++) d[i] = i < yn - 2 ? ys[i] : i == yn - 2 ? 1 : i == yn - 1 ? n : k;
    PyObject *yshape = int_tuple(d, yn + 1), *yr = reshaped(yt, yshape);
    Py_XDECREF(yshape);
    PyObject *full_shape = int_tuple(full, nf), *result = NULL;
    if (full_shape == NULL) {
        Py_XDECREF(xr);
        Py_XDECREF(yr);
        return NULL;
    }
    xr = widened(xr, full, nf, full_shape);
    yr = widened(yr, full, nf, full_shape);
    if (xr != NULL && yr != NULL) {
        PyObject *bargs[3] = {binary_mul, xr, yr};
        PyObject *product = c_binary(NULL, bargs, 3);
        PyObject *axes = product == NULL ? NULL : Py_BuildValue("(i)", nf - 1), *summed = NULL;
        if (axes != NULL) {
            PyObject *rargs[3] = {reduce_sum, product, axes};
            summed = c_reduce(NULL, rargs, 3);
        }
        PyObject *shape = int_tuple(out, nb + 2);
        result = reshaped(summed, shape);
        Py_XDECREF(shape);
        Py_XDECREF(axes);
        Py_XDECREF(product);
    }
    Py_DECREF(full_shape);
    Py_XDECREF(xr);
    Py_XDECREF(yr);
    return result;
}

static PyObject *configure_contract(PyObject *self, PyObject *args) {
    PyObject *globals, *reduce_op, *sum, *mul, *fallback;
    if (!PyArg_ParseTuple(args, "O!OOOO", &PyDict_Type, &globals, &reduce_op, &sum, &mul, &fallback)) return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "configure_contract(ir.__dict__, Op.REDUCE, ReduceOp.SUM, BinaryOp.MUL, "
                                         "python_reduce)");
        return NULL;
    }
    if (s_split_k == NULL) {
        s_split_k = PyUnicode_InternFromString("SPLIT_K");
        s_split_k_at = PyUnicode_InternFromString("SPLIT_K_AT");
        s_split_reduce_at = PyUnicode_InternFromString("SPLIT_REDUCE_AT");
        if (s_split_k == NULL || s_split_k_at == NULL || s_split_reduce_at == NULL) return NULL;
    }
    Py_XSETREF(ir_globals, Py_NewRef(globals));
    Py_XSETREF(op_reduce, Py_NewRef(reduce_op));
    Py_XSETREF(reduce_sum, Py_NewRef(sum));
    Py_XSETREF(binary_mul, Py_NewRef(mul));
    Py_XSETREF(py_reduce, Py_NewRef(fallback));
    Py_RETURN_NONE;
}
