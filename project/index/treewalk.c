/* The nodes of chosen types in a parsed tree, in one walk in C: `project.index._treewalk.collect`.
 *
 * Why this file exists: the PHP extractor needs about 200,000 nodes of 20 types out of the 6.1
 * million nodes of a tree the size of Symfony. tree-sitter's query cursor finds them, but it keeps
 * match state for every node it passes (about 1.0 s on Symfony, a third of the parse); a plain tree
 * cursor that only compares each node's symbol with a table takes a third of that. A pattern's
 * child under a parent (`(call function: (identifier) @name)`) is a rule applied as the walk
 * passes the child; patterns of other shapes stay tree-sitter queries, run on the few nodes this
 * walk hands back (project/index/treewalk.py, project/index/parse.py).
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
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tree_sitter/api.h"
#include "types.h" /* py-tree-sitter's binding: Node, Tree */

#ifndef TREE_SITTER_VERSION
#error "compile with -DTREE_SITTER_VERSION=\"x.y.z\", the release whose headers are used"
#endif

/* One found node as (start_byte, -end_byte, name, node) appended to `found`; -1 on an error. A node is
 * made as the binding's node_new_internal makes one: it holds a reference to the tree. */
static int emit(PyObject *found, PyTypeObject *node_type, TSNode node, PyObject *tree, PyObject *name) {
    Node *item = PyObject_New(Node, node_type);
    if (item == NULL) {
        return -1;
    }
    item->node = node;
    item->children = NULL;
    item->tree = Py_NewRef(tree);
    PyObject *row = PyTuple_New(4);
    PyObject *first = PyLong_FromUnsignedLong(ts_node_start_byte(node));
    /* -end_byte: source order puts the outer of two nodes that start together first */
    PyObject *last = PyLong_FromLong(-(long)ts_node_end_byte(node));
    if (row == NULL || first == NULL || last == NULL) {
        Py_XDECREF(row);
        Py_XDECREF(first);
        Py_XDECREF(last);
        Py_DECREF(item);
        return -1;
    }
    PyTuple_SET_ITEM(row, 0, first);
    PyTuple_SET_ITEM(row, 1, last);
    PyTuple_SET_ITEM(row, 2, Py_NewRef(name));
    PyTuple_SET_ITEM(row, 3, (PyObject *)item);
    int failed = PyList_Append(found, row);
    Py_DECREF(row);
    return failed;
}

/* A rule captures a child of a parent: records of four native uint16 (parent symbol, field id or 0
 * for any field, child symbol or ANY_NAMED, 1 + the index of the name in `names`), the form of the
 * patterns `(parent field: (child) @name)` and `(parent (child) @name)`. */
typedef struct {
    uint16_t parent, field, child, name;
} Rule;
#define ANY_NAMED 0xFFFF

/* collect(root, table, names[, rules]) -> [(start_byte, -end_byte, name, node), ...] in the walk's
 * order (a node before its children, siblings in source order). `table[symbol]` is 0 for a symbol
 * not wanted, LEAF for one whose nodes hold no wanted node (the walk does not go into them), else
 * 1 + the index in `names` of the name its nodes are given; `rules` (bytes of Rule records) capture
 * children by their parent. */
#define LEAF 255
static PyObject *collect(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "collect(root, table, names[, rules]) takes 3 or 4 arguments");
        return NULL;
    }
    PyObject *root = args[0], *table = args[1], *names = args[2], *rules = nargs == 4 ? args[3] : NULL;
    if (strcmp(Py_TYPE(root)->tp_name, "tree_sitter.Node") != 0) {
        PyErr_SetString(PyExc_TypeError, "root must be a tree_sitter.Node");
        return NULL;
    }
    if (!PyBytes_Check(table) || !PyTuple_Check(names) || (rules != NULL && !PyBytes_Check(rules))) {
        PyErr_SetString(PyExc_TypeError, "table and rules must be bytes and names a tuple");
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
    Py_ssize_t rule_count = 0;
    Rule *rule = NULL;
    if (rules != NULL) {
        if (PyBytes_GET_SIZE(rules) % sizeof(Rule) != 0) {
            PyErr_SetString(PyExc_ValueError, "rules must be whole records of four uint16");
            return NULL;
        }
        rule_count = PyBytes_GET_SIZE(rules) / (Py_ssize_t)sizeof(Rule);
        rule = (Rule *)PyBytes_AS_STRING(rules);
        for (Py_ssize_t i = 0; i < rule_count; i++) {
            if (rule[i].parent >= symbols || rule[i].name == 0 || rule[i].name > count) {
                PyErr_SetString(PyExc_ValueError, "a rule names a parent past the table or a name past names");
                return NULL;
            }
        }
    }
    Node *start = (Node *)root;
    if (start->tree == NULL) {
        PyErr_SetString(PyExc_ValueError, "root has no tree");
        return NULL;
    }
    PyTypeObject *node_type = Py_TYPE(root);
    /* parent[symbol]: the symbol is a parent some rule reads the children of; up[d]: the symbol of the
     * node at depth d on the way down to the current one */
    unsigned char *parent = calloc((size_t)symbols + 1, 1);
    size_t depth = 0, capacity = 64;
    TSSymbol *up = malloc(capacity * sizeof(TSSymbol));
    PyObject *found = PyList_New(0);
    if (parent == NULL || up == NULL || found == NULL) {
        free(parent);
        free(up);
        Py_XDECREF(found);
        return found == NULL ? NULL : PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < rule_count; i++) {
        parent[rule[i].parent] = 1;
    }
    TSTreeCursor cursor = ts_tree_cursor_new(start->node);
    for (;;) {
        TSNode node = ts_tree_cursor_current_node(&cursor);
        TSSymbol symbol = ts_node_symbol(node);
        unsigned char mark = symbol < symbols ? wanted[symbol] : 0;
        if (mark && mark != LEAF && emit(found, node_type, node, start->tree, PyTuple_GET_ITEM(names, mark - 1))) {
            goto fail;
        }
        /* an ERROR node's symbol is 65535, past every table: read `parent` only below its end */
        if (depth > 0 && up[depth - 1] < symbols && parent[up[depth - 1]]) {
            TSSymbol above = up[depth - 1];
            TSFieldId field = ts_tree_cursor_current_field_id(&cursor);
            bool named = ts_node_is_named(node);
            for (Py_ssize_t i = 0; i < rule_count; i++) {
                const Rule *r = &rule[i];
                if (r->parent == above && (r->field == 0 || r->field == field) &&
                    (r->child == symbol || (r->child == ANY_NAMED && named)) &&
                    emit(found, node_type, node, start->tree, PyTuple_GET_ITEM(names, r->name - 1))) {
                    goto fail;
                }
            }
        }
        if (depth == capacity) {
            TSSymbol *grown = realloc(up, 2 * capacity * sizeof(TSSymbol));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            up = grown;
            capacity *= 2;
        }
        up[depth] = symbol;
        if (mark != LEAF && ts_tree_cursor_goto_first_child(&cursor)) {
            depth++;
            continue;
        }
        while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
            if (!ts_tree_cursor_goto_parent(&cursor)) {
                ts_tree_cursor_delete(&cursor);
                free(parent);
                free(up);
                return found;
            }
            depth--;
        }
    }
fail:
    ts_tree_cursor_delete(&cursor);
    free(parent);
    free(up);
    Py_DECREF(found);
    return NULL;
}

static PyMethodDef methods[] = {
    {"collect", (PyCFunction)(void (*)(void))collect, METH_FASTCALL,
     "collect(root, table, names[, rules]): the nodes under root the table or the rules name, in walk order"},
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
