/* The nodes of chosen types in a parsed tree, in one walk in C: `project.index._treewalk.collect`.
 *
 * Why this file exists: the PHP extractor needs about 200,000 nodes of 20 types out of the 6.1
 * million nodes of a tree the size of Symfony. tree-sitter's query cursor finds them, but it keeps
 * match state for every node it passes (about 1.0 s on Symfony, a third of the parse); a walk that
 * only compares each node's symbol with a table takes a fraction of that. A pattern's
 * child under a parent (`(call function: (identifier) @name)`) is a rule applied as the walk
 * passes the child; patterns of other shapes stay tree-sitter queries, run on the few nodes this
 * walk hands back (project/index/treewalk.py, project/index/parse.py).
 *
 * It reads py-tree-sitter's objects (`Node`: a TSNode and its tree) through the struct layout of the
 * binding it was compiled against, and the tree's subtrees through tree-sitter's own internal headers
 * (subtree.h, language.h), as its tree cursor does: hatch_build.py compiles it with the headers and
 * the C runtime of the same tree-sitter release as the one the package pins, and records that release
 * in TREE_SITTER_VERSION; project/index/treewalk.py uses this module only when the installed release
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
/* tree-sitter's own headers: subtrees, alias sequences, field maps. Its LookaheadIterator is renamed
 * here: the binding's types.h names a Python type so. */
#define LookaheadIterator TSLookaheadIteratorState
#include "language.h"
#include "tree.h"
#undef LookaheadIterator
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

/* One node whose children the walk is going through. The walk reads the tree's subtrees directly, as
 * tree-sitter's own cursor does, but without popping and rebuilding the cursor's iterator at every
 * sibling: the cursor spent about 100 ns a node (0.8 s of sympy's 8 million), this loop a fraction.
 * A hidden node (a grammar rule that makes no node of its own) is gone through like a visible one,
 * its children being its nearest visible ancestor's, as the cursor and the query see them. */
typedef struct {
    Subtree parent;          /* has children */
    uint32_t index;          /* the next child */
    uint32_t structural;     /* the next child's index among the non-extra ones (aliases and fields) */
    Length position;         /* where the next child starts */
    const TSSymbol *aliases; /* the production's alias of each structural child, or NULL */
    TSSymbol above;          /* the symbol of the nearest visible ancestor: the parent the rules read */
    TSFieldId field;         /* a hidden parent's own field, its children's when its map names none */
} Frame;

/* Ask the memory for every child's data at once: the walk reads each in turn, and a tree's subtrees
 * lie wherever the parser allocated them, so reading them one by one waits on each (most of the walk's
 * time, by perf); fetched together, the waits overlap. */
static inline void prefetch_children(Subtree parent) {
    const Subtree *children = ts_subtree_children(parent);
    for (uint32_t i = 0; i < parent.ptr->child_count; i++) {
        if (!children[i].data.is_inline) {
            __builtin_prefetch(children[i].ptr);
            __builtin_prefetch((const char *)children[i].ptr - 64); /* its own children, kept just before */
        }
    }
}

/* The field of a parent's structural child `index`: from the parent production's field map, else the
 * hidden parent's own (ts_tree_cursor_current_field_id's rule). */
static TSFieldId field_of(const TSLanguage *language, const Frame *frame, uint32_t index) {
    const TSFieldMapEntry *map, *end;
    ts_language_field_map(language, frame->parent.ptr->production_id, &map, &end);
    for (; map < end; map++) {
        if (!map->inherited && map->child_index == index) {
            return map->field_id;
        }
    }
    return frame->field;
}

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
    if (start->tree == NULL || start->node.id == NULL || start->node.tree == NULL) {
        PyErr_SetString(PyExc_ValueError, "root has no tree");
        return NULL;
    }
    PyTypeObject *node_type = Py_TYPE(root);
    const TSTree *tree = start->node.tree;
    const TSLanguage *language = tree->language;
    /* parent[symbol]: the symbol is a parent some rule reads the children of */
    unsigned char *parent = calloc((size_t)symbols + 1, 1);
    size_t top = 0, capacity = 64;
    Frame *stack = malloc(capacity * sizeof(Frame));
    PyObject *found = PyList_New(0);
    if (parent == NULL || stack == NULL || found == NULL) {
        free(parent);
        free(stack);
        Py_XDECREF(found);
        return found == NULL ? NULL : PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < rule_count; i++) {
        parent[rule[i].parent] = 1;
    }
    /* the root itself, as the cursor visits it first; the rules read no parent above it */
    TSSymbol symbol = ts_node_symbol(start->node);
    unsigned char mark = symbol < symbols ? wanted[symbol] : 0;
    if (mark && mark != LEAF && emit(found, node_type, start->node, start->tree, PyTuple_GET_ITEM(names, mark - 1))) {
        goto fail;
    }
    Subtree subtree = *(const Subtree *)start->node.id;
    if (mark == LEAF || ts_subtree_visible_child_count(subtree) == 0) {
        goto done;
    }
    stack[0] = (Frame){
        .parent = subtree,
        .position = {start->node.context[0], {start->node.context[1], start->node.context[2]}},
        .aliases = ts_language_alias_sequence(language, subtree.ptr->production_id),
        .above = symbol,
    };
    prefetch_children(subtree);
    top = 1;
    while (top > 0) {
        Frame *frame = &stack[top - 1];
        uint32_t children = frame->parent.ptr->child_count;
        if (frame->index == children) {
            top--;
            continue;
        }
        const Subtree *siblings = ts_subtree_children(frame->parent);
        const Subtree *child = &siblings[frame->index];
        Length position = frame->position;
        frame->position = length_add(position, ts_subtree_size(*child));
        if (++frame->index < children) {
            frame->position = length_add(frame->position, ts_subtree_padding(siblings[frame->index]));
        }
        if (frame->index < children && !siblings[frame->index].data.is_inline &&
            siblings[frame->index].ptr->child_count > 0) {
            prefetch_children(siblings[frame->index]); /* the next sibling's children, while this one is walked */
        }
        bool extra = ts_subtree_extra(*child);
        uint32_t structural = frame->structural;
        TSSymbol alias = 0;
        if (!extra) {
            alias = frame->aliases != NULL ? frame->aliases[structural] : 0;
            frame->structural++;
        }
        Frame next = {.parent = *child, .position = position};
        if (!ts_subtree_visible(*child) && !alias) {
            if (ts_subtree_visible_child_count(*child) == 0) {
                continue;
            }
            next.above = frame->above;
            next.field = extra ? 0 : field_of(language, frame, structural);
        } else {
            symbol = alias ? alias : ts_subtree_symbol(*child);
            mark = symbol < symbols ? wanted[symbol] : 0;
            TSNode node = ts_node_new(tree, child, position, alias);
            if (mark && mark != LEAF && emit(found, node_type, node, start->tree, PyTuple_GET_ITEM(names, mark - 1))) {
                goto fail;
            }
            /* an ERROR node's symbol is 65535, past every table: read `parent` only below its end */
            TSSymbol above = frame->above;
            if (above < symbols && parent[above]) {
                TSFieldId field = extra ? 0 : field_of(language, frame, structural);
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
            if (mark == LEAF || ts_subtree_visible_child_count(*child) == 0) {
                continue;
            }
            next.above = symbol;
        }
        next.aliases = ts_language_alias_sequence(language, child->ptr->production_id);
        if (top == capacity) {
            Frame *grown = realloc(stack, 2 * capacity * sizeof(Frame));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            stack = grown;
            capacity *= 2;
        }
        prefetch_children(next.parent);
        stack[top++] = next;
    }
done:
    free(parent);
    free(stack);
    return found;
fail:
    free(parent);
    free(stack);
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
