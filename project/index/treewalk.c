/* The nodes of chosen types in a parsed tree, in one walk in C: `project.index._treewalk.collect`.
 *
 * Why this file exists: the PHP extractor needs about 200,000 nodes of 20 types out of the 6.1
 * million nodes of a tree the size of Symfony. tree-sitter's query cursor finds them, but it keeps
 * match state for every node it passes (about 1.0 s on Symfony, a third of the parse); a plain tree
 * cursor that only compares each node's symbol with a table takes a third of that. The patterns
 * that look at a node's children stay tree-sitter queries, run on the few nodes this walk hands
 * back (project/index/parse.py).
 *
 * It reads py-tree-sitter's objects (`Node`: a TSNode and its tree) through the struct layout of the
 * binding it was compiled against: hatch_build.py compiles it with the headers and the C runtime of
 * the same tree-sitter release as the one the package pins, and records that release in
 * TREE_SITTER_VERSION; project/index/treewalk.py uses this module only when the installed release
 * is that one, and falls back to the query otherwise. It only reads the tree; every node it returns
 * holds a reference to the tree, as the binding's own nodes do.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "tree_sitter/api.h"
#include "types.h" /* py-tree-sitter's binding: Node, Tree */

#ifndef TREE_SITTER_VERSION
#error "compile with -DTREE_SITTER_VERSION=\"x.y.z\", the release whose headers are used"
#endif

/* collect(root, table, names) -> [(start_byte, -end_byte, name, node), ...] in the walk's order
 * (a node before its children, siblings in source order). `table[symbol]` is 0 for a symbol not
 * wanted, LEAF for one whose nodes hold no wanted node (the walk does not go into them), else 1 + the
 * index in `names` of the name its nodes are given. */
#define LEAF 255
static PyObject *collect(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "collect(root, table, names) takes 3 arguments");
        return NULL;
    }
    PyObject *root = args[0], *table = args[1], *names = args[2];
    if (strcmp(Py_TYPE(root)->tp_name, "tree_sitter.Node") != 0) {
        PyErr_SetString(PyExc_TypeError, "root must be a tree_sitter.Node");
        return NULL;
    }
    if (!PyBytes_Check(table) || !PyTuple_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "table must be bytes and names a tuple");
        return NULL;
    }
    const unsigned char *wanted = (const unsigned char *)PyBytes_AS_STRING(table);
    Py_ssize_t symbols = PyBytes_GET_SIZE(table), count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < symbols; i++) {
        if (wanted[i] > count && wanted[i] != LEAF) {
            PyErr_SetString(PyExc_ValueError, "table names an entry past the end of names");
            return NULL;
        }
    }
    Node *start = (Node *)root;
    if (start->tree == NULL) {
        PyErr_SetString(PyExc_ValueError, "root has no tree");
        return NULL;
    }
    PyTypeObject *node_type = Py_TYPE(root);
    PyObject *found = PyList_New(0);
    if (found == NULL) {
        return NULL;
    }
    TSTreeCursor cursor = ts_tree_cursor_new(start->node);
    for (;;) {
        TSNode node = ts_tree_cursor_current_node(&cursor);
        TSSymbol symbol = ts_node_symbol(node);
        unsigned char mark = symbol < symbols ? wanted[symbol] : 0;
        if (mark && mark != LEAF) {
            Node *item = PyObject_New(Node, node_type); /* as the binding's node_new_internal */
            if (item == NULL) {
                goto fail;
            }
            item->node = node;
            item->children = NULL;
            item->tree = Py_NewRef(start->tree);
            PyObject *row = PyTuple_New(4);
            PyObject *first = PyLong_FromUnsignedLong(ts_node_start_byte(node));
            /* -end_byte: source order puts the outer of two nodes that start together first */
            PyObject *last = PyLong_FromLong(-(long)ts_node_end_byte(node));
            if (row == NULL || first == NULL || last == NULL) {
                Py_XDECREF(row);
                Py_XDECREF(first);
                Py_XDECREF(last);
                Py_DECREF(item);
                goto fail;
            }
            PyObject *name = PyTuple_GET_ITEM(names, mark - 1);
            PyTuple_SET_ITEM(row, 0, first);
            PyTuple_SET_ITEM(row, 1, last);
            PyTuple_SET_ITEM(row, 2, Py_NewRef(name));
            PyTuple_SET_ITEM(row, 3, (PyObject *)item);
            int failed = PyList_Append(found, row);
            Py_DECREF(row);
            if (failed) {
                goto fail;
            }
        }
        if (mark != LEAF && ts_tree_cursor_goto_first_child(&cursor)) {
            continue;
        }
        while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
            if (!ts_tree_cursor_goto_parent(&cursor)) {
                ts_tree_cursor_delete(&cursor);
                return found;
            }
        }
    }
fail:
    ts_tree_cursor_delete(&cursor);
    Py_DECREF(found);
    return NULL;
}

static PyMethodDef methods[] = {
    {"collect", (PyCFunction)(void (*)(void))collect, METH_FASTCALL,
     "collect(root, table, names): the nodes under root whose symbol the table names, in walk order"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "_treewalk", "The nodes of chosen types in a parsed tree, found in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__treewalk(void) {
    PyObject *module = PyModule_Create(&definition);
    if (module != NULL && PyModule_AddStringConstant(module, "TREE_SITTER_VERSION", TREE_SITTER_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
