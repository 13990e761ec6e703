"""Several mutants in one graded notebook, when they cannot affect one another's grade cells.

Grading a notebook costs seconds (a kernel, the lesson's imports, every cell), and a lesson has
30-40 mutants and right answers. Mutants that replace different solution cells and are graded on
different grade cells can share one notebook, provided no mutant can change what another one's
cells or grade cells read. This module decides that statically, conservatively:

- a variant's *reach* is every name its replaced cells bind (in the mutant's code and in the
  original solution), every name they may mutate in place (the base of a subscript or attribute
  assignment, the receiver of a mutating method such as ``append`` or ``add_edge``), and,
  transitively, every name bound by a later solution cell that reads a name in the reach;
- a variant's *needs* are the names its replaced cells and its grade cells read;
- two variants share a notebook only if their cells and their grade cells are disjoint and
  neither's reach meets the other's needs. Names the setup imports (modules, functions: the
  checks, numpy) and builtins are shared by everyone and are not counted.

So a mutant that loses points in a shared notebook loses them for its own reason, exactly as it
would alone. tests/test_batching.py checks the rule on known dependent and independent pairs.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import nbformat

from tests.mutants import Mutant

_BUILTINS = frozenset(dir(builtins))


def _tree(source: str) -> ast.AST:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return ast.parse("")


def bound_names(source: str) -> set[str]:
    """Names a cell binds at any depth (assignments, defs, imports, loop and except targets)."""
    out: set[str] = set()
    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def read_names(source: str) -> set[str]:
    """Names a cell loads (any depth), builtins excluded."""
    tree = _tree(source)
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return loaded - _BUILTINS


MUTATING_METHODS = frozenset(
    "append extend insert pop remove clear update setdefault popitem sort reverse add discard "
    "add_edge add_edges_from add_node add_nodes_from remove_edge remove_node remove_edges_from "
    "remove_nodes_from fill resize put itemset setflags sort_values drop fillna rename "
    "set_index reset_index replace clip".split()
)


def mutated_names(source: str) -> set[str]:
    """Names whose objects a cell may change in place (x[i] = .., x.a = .., x.append(..), del x[i])."""
    out: set[str] = set()

    def base(node: ast.AST) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            name = base(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATING_METHODS
        ):
            name = base(node.func.value)
        elif isinstance(node, ast.AugAssign):
            name = base(node.target)
        else:
            continue
        if name:
            out.add(name)
    return out


def _imported_names(source: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
    return out


@dataclass(frozen=True)
class LessonCells:
    """The code cells of the instructor's notebook, in order, by role."""

    order: tuple[tuple[str, str, str], ...]  # (role, grade_id, source); role: setup/solution/grade
    shared: frozenset[str]  # names the locked cells import or define as functions

    @classmethod
    def from_source(cls, nb: nbformat.NotebookNode, solutions: Mapping[str, str]) -> LessonCells:
        order = []
        shared: set[str] = set()
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta:
                continue
            gid = meta.get("grade_id", "")
            if meta.get("grade"):
                order.append(("grade", gid, cell.source))
            elif meta.get("solution"):
                order.append(("solution", gid, solutions.get(gid, cell.source)))
            elif meta.get("locked"):
                order.append(("setup", gid, cell.source))
                shared |= _imported_names(cell.source)
        return cls(tuple(order), frozenset(shared))

    def reach(self, variant: Mutant) -> set[str]:
        names: set[str] = set()
        for gid, code in variant.cells.items():
            original = next((src for role, g, src in self.order if g == gid), "")
            names |= bound_names(code) | bound_names(original) | mutated_names(code)
        names -= self.shared
        # Later solution cells that read a reached name may bind other names differently.
        changed = True
        while changed:
            changed = False
            for role, gid, src in self.order:
                if role == "solution" and gid not in variant.cells and read_names(src) & names:
                    new = bound_names(src) - names - self.shared
                    if new:
                        names |= new
                        changed = True
        return names

    def needs(self, variant: Mutant) -> set[str]:
        sources = dict((g, s) for _, g, s in self.order)
        names: set[str] = set()
        for code in variant.cells.values():
            names |= read_names(code) | bound_names(code)
        for gid in variant.grades:
            names |= read_names(sources.get(gid, ""))
        return names - self.shared


def batches(cells: LessonCells, variants: Sequence[Mutant]) -> list[list[int]]:
    """Groups of variant indices that can share one graded notebook (greedy, in order)."""
    reach = [cells.reach(v) for v in variants]
    needs = [cells.needs(v) for v in variants]
    groups: list[list[int]] = []
    for i in range(len(variants)):
        for group in groups:
            if all(_independent(i, j, variants, reach, needs) for j in group):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def _independent(i: int, j: int, variants, reach, needs) -> bool:
    a, b = variants[i], variants[j]
    if set(a.cells) & set(b.cells) or set(a.grades) & set(b.grades):
        return False
    return not (reach[i] & needs[j]) and not (reach[j] & needs[i])
