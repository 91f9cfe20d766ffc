// Reference definitions for bench_languages.py, read by the TypeScript compiler's own parser.
// Usage: node typescript_symbols.cjs TYPESCRIPT_DIR ROOT < list-of-relative-paths
// Prints one JSON object a line: {"t":"def","kind","name","path","line"}; a file with parse errors is
// {"t":"error","path","message"} and left out of the comparison (as tree-sitter's stale files are).
// Kinds and start lines follow docs/codegraph.md: a definition starts at its first token after any
// decorators; an arrow function or function expression bound to a name is a function at that name.
"use strict";
const fs = require("fs");
const path = require("path");
const ts = require(path.join(process.argv[2], "typescript"));
const root = process.argv[3];

const KINDS = { ".ts": ts.ScriptKind.TS, ".mts": ts.ScriptKind.TS, ".cts": ts.ScriptKind.TS,
  ".tsx": ts.ScriptKind.TSX, ".js": ts.ScriptKind.JSX, ".jsx": ts.ScriptKind.JSX, ".mjs": ts.ScriptKind.JS,
  ".cjs": ts.ScriptKind.JS };

function moduleName(rel) {
  let stem = rel;
  for (const ext of [".d.ts", ".d.mts", ".d.cts", ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"]) {
    if (stem.endsWith(ext)) { stem = stem.slice(0, -ext.length); break; }
  }
  if (stem.endsWith("/index")) stem = stem.slice(0, -"/index".length);
  return stem.split("/").pop();
}

function nameOf(name) {
  if (!name) return "";
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  if (ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)) return name.text;
  return "";  // computed names are not indexed
}

function isFunctionValue(node) {
  // out of the casts and parentheses around it: `((...a) => {}) as Render`, `(() => {}) satisfies H`, `f!`
  while (node && (ts.isAsExpression(node) || ts.isSatisfiesExpression(node) || ts.isParenthesizedExpression(node)
      || ts.isNonNullExpression(node))) {
    node = node.expression;
  }
  return !!node && (ts.isArrowFunction(node) || ts.isFunctionExpression(node));
}

// React's wrappers of a function component (docs/codegraph.md): `const Island = React.forwardRef((p, ref) => …)`
// is the function component Island, as `const Button = (props) => …` is
const WRAPPERS = new Set(["forwardRef", "memo", "React.forwardRef", "React.memo"]);

function wrappedComponent(node) {
  for (let i = 0; i < 3 && node && ts.isCallExpression(node) && node.arguments.length
      && WRAPPERS.has(node.expression.getText()); i++) {
    node = node.arguments[0];
  }
  return node;
}

function startOf(node, sf) {
  const modifiers = ts.canHaveModifiers(node) ? (node.modifiers || []) : [];
  const decorators = modifiers.filter((m) => ts.isDecorator(m));
  if (!decorators.length) return node.getStart(sf);
  const rest = modifiers.filter((m) => !ts.isDecorator(m));
  if (rest.length) return rest[0].getStart(sf);
  return ts.skipTrivia(sf.text, decorators[decorators.length - 1].end);
}

function boundName(node) {
  // a class expression is named by the variable it is assigned to
  const parent = node.parent;
  return parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name) && parent.initializer === node
    ? parent.name.text : "";
}

function emit(rel, sf, kind, name, pos) {
  const line = sf.getLineAndCharacterOfPosition(pos).line + 1;
  process.stdout.write(JSON.stringify({ t: "def", kind, name, path: rel, line }) + "\n");
}

// A function assigned to a member at the top of a JavaScript file, when the compiler's binder reads the
// assignment as a declaration: `exports.f = …`, `exports.f.g = …` and `module.exports.f = …` are the
// function f (g), `X.prototype.m = …`, `X.m = …` and each function of `X.prototype = {…}` the method m (the
// binder's kinds, read by the compiler's
// own getAssignmentDeclarationKind: its public API has no other way to ask). In a TypeScript file the
// binder reads `X.m = …` only on a function X of the file (expando properties): not indexed.
const JAVASCRIPT = new Set([".js", ".jsx", ".mjs", ".cjs"]);
function assigned(rel, sf, expr) {
  if (expr.operatorToken.kind !== ts.SyntaxKind.EqualsToken || !ts.isPropertyAccessExpression(expr.left)
      || !ts.isIdentifier(expr.left.name)) return;
  const kind = ts.getAssignmentDeclarationKind(expr);
  const K = ts.AssignmentDeclarationKind;
  if (kind === K.Prototype && ts.isObjectLiteralExpression(expr.right)) {  // `X.prototype = { m: function… }`
    for (const property of expr.right.properties) {
      const name = nameOf(property.name);
      if (name && (ts.isMethodDeclaration(property) || ts.isGetAccessorDeclaration(property)
          || ts.isSetAccessorDeclaration(property)
          || (ts.isPropertyAssignment(property) && isFunctionValue(property.initializer)))) {
        emit(rel, sf, "method", name, property.getStart(sf));
      }
    }
    return;
  }
  if (!isFunctionValue(expr.right)) return;
  if (kind === K.ExportsProperty) emit(rel, sf, "function", expr.left.name.text, expr.getStart(sf));
  else if (kind === K.PrototypeProperty || kind === K.Property) emit(rel, sf, "method", expr.left.name.text, expr.getStart(sf));
}

function visit(rel, sf, node, owner) {
  let inner = owner;
  if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
    const name = node.name ? node.name.text : (ts.isClassExpression(node) ? boundName(node) : "");
    const named = ts.isClassExpression(node) ? boundName(node) : name;
    if (named) emit(rel, sf, "class", named, startOf(node, sf));
    inner = named ? "class" : null;
  } else if (ts.isInterfaceDeclaration(node)) {
    emit(rel, sf, "interface", node.name.text, startOf(node, sf));
    inner = "interface";
  } else if (ts.isTypeAliasDeclaration(node)) {
    emit(rel, sf, "type", node.name.text, startOf(node, sf));
  } else if (ts.isEnumDeclaration(node)) {
    emit(rel, sf, "enum", node.name.text, startOf(node, sf));
  } else if (ts.isEnumMember(node)) {
    const name = nameOf(node.name);
    if (name) emit(rel, sf, "enum_case", name, node.getStart(sf));
  } else if (ts.isFunctionDeclaration(node)) {
    if (node.name) emit(rel, sf, "function", node.name.text, startOf(node, sf));
    inner = null;
  } else if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)
      && isFunctionValue(wrappedComponent(node.initializer))) {
    emit(rel, sf, "function", node.name.text, node.getStart(sf));
  } else if (ts.isModuleDeclaration(node)) {
    if (ts.isIdentifier(node.name) && !(node.flags & ts.NodeFlags.GlobalAugmentation)) {
      emit(rel, sf, "namespace", node.name.text, startOf(node, sf));
    }
    inner = null;
  } else if (owner === "class" && (ts.isMethodDeclaration(node) || ts.isGetAccessorDeclaration(node)
      || ts.isSetAccessorDeclaration(node) || ts.isConstructorDeclaration(node)
      || (ts.isPropertyDeclaration(node) && isFunctionValue(node.initializer)))) {
    const name = ts.isConstructorDeclaration(node) ? "constructor" : nameOf(node.name);
    if (name) emit(rel, sf, "method", name, startOf(node, sf));
    inner = null;
  } else if (owner === "interface" && (ts.isMethodSignature(node) || ts.isGetAccessorDeclaration(node)
      || ts.isSetAccessorDeclaration(node))) {
    const name = nameOf(node.name);
    if (name) emit(rel, sf, "method", name, startOf(node, sf));
    inner = null;
  } else if (ts.isExpressionStatement(node) && ts.isSourceFile(node.parent) && ts.isBinaryExpression(node.expression)
      && JAVASCRIPT.has(path.extname(rel))) {
    // the statement's assignment, and those it assigns in a chain (`jQuery.fn = jQuery.prototype = {…}`)
    for (let expr = node.expression; ts.isBinaryExpression(expr); expr = expr.right) assigned(rel, sf, expr);
  } else if (ts.isFunctionLike(node) || ts.isObjectLiteralExpression(node) || ts.isTypeLiteralNode(node)) {
    inner = null;
  }
  ts.forEachChild(node, (child) => visit(rel, sf, child, inner));
}

// A Vue component: its script blocks where Vue's compiler finds them, everything else blanked (lines kept)
function vueScripts(text) {
  const { parse } = require(path.join(process.argv[2], "@vue/compiler-sfc"));
  const { descriptor } = parse(text);
  let kept = text.replace(/[^\r\n]/g, " ");
  for (const block of [descriptor.script, descriptor.scriptSetup]) {
    if (!block) continue;
    const { start, end } = block.loc;
    kept = kept.slice(0, start.offset) + text.slice(start.offset, end.offset) + kept.slice(end.offset);
  }
  return kept;
}

// A Svelte component: its script blocks (instance and module) where Svelte's compiler finds them
function svelteScripts(text) {
  const { parse } = require(path.join(process.argv[2], "svelte", "compiler"));
  const ast = parse(text, { modern: true });
  let kept = text.replace(/[^\r\n]/g, " ");
  for (const block of [ast.instance, ast.module]) {
    if (!block) continue;
    const { start, end } = block.content;
    kept = kept.slice(0, start) + text.slice(start, end) + kept.slice(end);
  }
  return kept;
}

const input = fs.readFileSync(0, "utf8").split("\n").filter(Boolean);
for (const rel of input) {
  const ext = path.extname(rel);
  const raw = fs.readFileSync(path.join(root, rel), "utf8");
  const component = ext === ".vue" || ext === ".svelte";
  const text = ext === ".vue" ? vueScripts(raw) : ext === ".svelte" ? svelteScripts(raw) : raw;
  const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, component ? ts.ScriptKind.TS : KINDS[ext]);
  if (sf.parseDiagnostics && sf.parseDiagnostics.length) {
    const message = ts.flattenDiagnosticMessageText(sf.parseDiagnostics[0].messageText, "\n");
    process.stdout.write(JSON.stringify({ t: "error", path: rel, message }) + "\n");
    continue;
  }
  emit(rel, sf, "module", moduleName(rel), 0);
  visit(rel, sf, sf, null);
}
