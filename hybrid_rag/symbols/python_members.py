"""A Python module's members (``symbols/members.py``) read from the tree-sitter tree the definition
finder already holds (``code/definitions.py``: one parse a file), and the same rules over an
``ast`` tree (``python_members``, below), for a file whose tree holds an error (the finder then
reads its ``ast`` tree anyway) or that has none.

Only the module's own statements are read, as ``ast``'s ``tree.body`` is: a decorated class is its
class, a comment is nothing, a statement inside an ``if`` is not the module's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from typing import Any

from hybrid_rag.code.members import Member

_UPPER = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_ENUM_BASES = re.compile(r"(?:^|\.)(?:Int|Str)?(?:Enum|Flag)$")


def tree_members(root: Any, path: str, text: str) -> list[Member]:
    """Re-exports, fields, variants and constants of a Python module from its tree-sitter ``root``."""
    lines = text.splitlines()
    out: list[Member] = []
    is_init = path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    body = list(_statements(root))
    listed = _all_names(body)
    defined = {
        _text(n.child_by_field_name("name"))
        for n in body
        if n.type in ("function_definition", "class_definition")
    }
    for node in body:
        if node.type == "import_from_statement":
            out.extend(_imported(node, lines, is_init, listed, defined))
        elif node.type == "expression_statement":
            for name in _targets(node):
                if _UPPER.match(name) and not name.startswith("__"):
                    out.append(_found(name, "constant", node, lines))
        elif node.type == "class_definition":
            out.extend(_class_members(node, lines))
    return out


def _statements(block: Any) -> Iterator[Any]:
    """The statements of a module or a block, a decorated definition as its definition."""
    for child in block.named_children:
        if child.type == "decorated_definition":
            inner = child.child_by_field_name("definition")
            if inner is not None:
                yield inner
        elif child.type != "comment":
            yield child


def _text(node: Any) -> str:
    return "" if node is None else node.text.decode("utf-8", errors="replace")


def _found(name: str, kind: str, node: Any, lines: Sequence[str], target: str = "") -> Member:
    start, end = node.start_point[0] + 1, node.end_point[0] + 1
    line = " ".join((lines[start - 1] if start <= len(lines) else "").split())[:200]
    return Member(name, kind, start, end, line, target)


def _imported(
    node: Any, lines: Sequence[str], is_init: bool, listed: set[str], defined: set[str]
) -> list[Member]:
    module_node = node.child_by_field_name("module_name")
    level, module = 0, _text(module_node)
    if module_node is not None and module_node.type == "relative_import":
        prefix = next((c for c in module_node.children if c.type == "import_prefix"), None)
        level = len(_text(prefix))
        module = _text(next((c for c in module_node.named_children if c.type == "dotted_name"), None))
    shown_module = "." * level + module
    out: list[Member] = []
    if any(c.type == "wildcard_import" for c in node.children):
        if is_init and level and module:
            out.append(_found(module.rsplit(".", 1)[-1], "reexport", node, lines, shown_module + ".*"))
        return out
    for name_node in node.children_by_field_name("name"):
        if name_node.type == "aliased_import":
            name, shown = (
                _text(name_node.child_by_field_name("name")),
                _text(name_node.child_by_field_name("alias")),
            )
        else:
            name = shown = _text(name_node)
        if (is_init and level) or (shown in listed and shown not in defined):
            out.append(_found(shown, "reexport", node, lines, f"{shown_module}.{name}"))
    return out


def _assignments(statement: Any) -> Iterator[Any]:
    """The assignments of an expression statement, a chained ``a = b = 1`` one by one."""
    node = statement.named_children[0] if statement.named_child_count == 1 else None
    while node is not None and node.type == "assignment":
        yield node
        node = node.child_by_field_name("right")


def _targets(statement: Any) -> list[str]:
    """The plain names an assignment statement binds (``ast``'s ``Name`` targets)."""
    out = []
    for assignment in _assignments(statement):
        left = assignment.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            out.append(_text(left))
    return out


def _class_members(cls: Any, lines: Sequence[str]) -> list[Member]:
    bases = cls.child_by_field_name("superclasses")
    names = [] if bases is None else [_text(b) for b in bases.named_children if b.type != "keyword_argument"]
    enum = any(_ENUM_BASES.search("".join(n.split())) for n in names)
    out: list[Member] = []
    body = cls.child_by_field_name("body")
    for node in [] if body is None else _statements(body):
        if node.type == "expression_statement":
            for name in _targets(node):
                if not name.startswith("__"):
                    out.append(_found(name, "variant" if enum else "field", node, lines))
        elif node.type == "class_definition":
            out.extend(_class_members(node, lines))
    return out


def _all_names(body: Sequence[Any]) -> set[str]:
    """The strings of the module's ``__all__`` list or tuple (none when it is computed; as ``ast``
    is read: an assignment or ``+=``, not an annotated one)."""
    for node in body:
        if node.type != "expression_statement" or node.named_child_count != 1:
            continue
        first = node.named_children[0]
        if first.type == "augmented_assignment":
            targets, value = [first.child_by_field_name("left")], first.child_by_field_name("right")
        else:
            chain = list(_assignments(node))
            if not chain or any(a.child_by_field_name("type") is not None for a in chain):
                continue
            targets, value = (
                [a.child_by_field_name("left") for a in chain],
                chain[-1].child_by_field_name("right"),
            )
        named = any(t is not None and t.type == "identifier" and _text(t) == "__all__" for t in targets)
        if named and value is not None and value.type in ("list", "tuple", "expression_list"):
            return {s for s in (_string(e) for e in value.named_children) if s is not None}
    return set()


def _string(node: Any) -> str | None:
    """A plain string literal's value (``ast.Constant`` of a str), else None."""
    if node.type != "string" or any(c.type == "interpolation" for c in node.named_children):
        return None
    start = next((c for c in node.children if c.type == "string_start"), None)
    if start is not None and any(ch in _text(start).lower() for ch in "bf"):
        return None
    content = [c for c in node.named_children if c.type == "string_content"]
    if any(c.named_child_count for c in content):  # escapes: leave it to the plain ones
        return None
    return "".join(_text(c) for c in content)


# -- the same rules over an ``ast`` tree (a file whose tree-sitter tree holds an error, or none) ------


def _ast_found(name: str, kind: str, node: ast.stmt, lines: Sequence[str], target: str = "") -> Member:
    """A member read from Python source: the statement's lines, its first line as the signature."""
    line = " ".join((lines[node.lineno - 1] if node.lineno <= len(lines) else "").split())[:200]
    return Member(name, kind, node.lineno, node.end_lineno or node.lineno, line, target)


def python_members(tree: ast.Module, path: str, text: str) -> list[Member]:
    """Re-exports, fields, variants and constants of a parsed Python module (module docstring)."""
    lines = text.splitlines()
    out: list[Member] = []
    is_init = path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    listed = _ast_all_names(tree)
    defined = {
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                shown = alias.asname or alias.name
                module = "." * node.level + (node.module or "")
                if alias.name == "*":
                    if is_init and node.level and node.module:
                        name = node.module.rsplit(".", 1)[-1]
                        out.append(_ast_found(name, "reexport", node, lines, module + ".*"))
                elif (is_init and node.level) or (shown in listed and shown not in defined):
                    out.append(_ast_found(shown, "reexport", node, lines, f"{module}.{alias.name}"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for name in _ast_targets(node):
                if _UPPER.match(name) and not name.startswith("__"):
                    out.append(_ast_found(name, "constant", node, lines))
        elif isinstance(node, ast.ClassDef):
            out.extend(_ast_class_members(node, lines))
    return out


def _ast_class_members(cls: ast.ClassDef, lines: Sequence[str]) -> list[Member]:
    enum = any(_ENUM_BASES.search(ast.unparse(b)) for b in cls.bases)
    out: list[Member] = []
    for node in cls.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for name in _ast_targets(node):
                if not name.startswith("__"):
                    out.append(_ast_found(name, "variant" if enum else "field", node, lines))
        elif isinstance(node, ast.ClassDef):
            out.extend(_ast_class_members(node, lines))
    return out


def _ast_targets(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _ast_all_names(tree: ast.Module) -> set[str]:
    """The strings of the module's ``__all__`` list or tuple (none when it is computed)."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                node.value, (ast.List, ast.Tuple)
            ):
                names = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
                return {n for n in names if isinstance(n, str)}
    return set()
