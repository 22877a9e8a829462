"""The import structure of the library, read from the source (``ast``), nothing imported.

Every ``import`` counts, also those inside functions (a deferred import is still a dependency).
Asserted, with no allow-list: no import cycle among the modules of ``jaxbandits/``; no import from
a lower layer to a higher one; no import of a private (underscore) name from a module of another
package; and no import from one algorithm module into another except along a declared family
(:data:`FAMILIES`).  ``python tests/test_layering.py`` prints what it finds.

Layers, lowest first (a module may import from its own layer and below):

0. infrastructure: precision, stats, watchdog, compilation_cache, programs, store, progress, and
   the presets (data: the settings of papers and released code, :mod:`jaxbandits.presets`), and the
   argument checks every layer shares (:mod:`jaxbandits.arguments`)
1. the instance type (``instances.base``)
2. the environment (reward models) and execution helpers: environment, batching, distributed
3. design (optimal-design solvers, lower bounds), and the instance catalogue built on it
   (``instances``: seeds, data; a calibrated generator sets its noise from a characteristic time)
4. the algorithm contract and the pieces several algorithms share: ``algorithms.base`` (contract,
   wrapper, per-instance cache), ``algorithms.common`` (least squares, GLR statistic, linear
   algebra, top-m selection), ``algorithms.glr`` (GLR thresholds and transportation costs),
   ``algorithms.glm`` (logistic MLE), ``algorithms.elimination`` (elimination rule, compacted XY
   design), ``algorithms.stages`` (stage schedules and rounding), ``algorithms.top_m.complexity``,
   and the rules layer, ``rules`` (``rules.thresholds``: every stopping threshold, written once;
   it imports nothing from ``algorithms``, and ``algorithms.common`` and ``algorithms.glr`` build
   on it)
5. algorithms (one module per algorithm or family, and the algorithms package)
6. engine, and validation (the argument checks of simulate and sweep)
7. jobs built on the engine: sweeps, calibration, and the top-level package

Algorithm modules import one another only to build on another algorithm's class, the edges of
:data:`FAMILIES` (the Oracle is XY-Oracle handed the truth; the Tirinzoni & Degenne variants
extend RAGE; LinGapE is the best-arm assembly of the GIFA framework; UCB-GLM shares LinUCB's
most-pulled recommendation; the budget-capped LinGapE baseline of seed 002 is
BudgetCapped around LinGapE).  A helper that two algorithms need moves down to layer 4 instead.
"""
from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jaxbandits"

LAYERS = [
    ("precision", "stats", "watchdog", "compilation_cache", "programs", "store", "progress", "presets", "arguments"),
    ("instances.base",),
    ("environment", "batching", "distributed"),
    ("design", "instances"),
    ("algorithms.base", "algorithms.common", "algorithms.glr", "algorithms.glm", "algorithms.elimination",
     "algorithms.stages", "algorithms.top_m.complexity", "rules"),
    ("algorithms",),
    ("engine", "validation"),
    ("sweeps", "calibration", ""),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` (a dotted import target) is or lies in."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(mod: str, path: Path, known: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import of ``mod`` inside the package."""
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = _resolve(a.name, known)
                if target is not None and target.startswith("jaxbandits"):
                    out.append((target, []))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            if not base.startswith("jaxbandits"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:  # ``from package import module``
                    out.append((sub, []))
                else:
                    out.append((_resolve(base, known), [a.name]))
    return out


def graph() -> dict[str, dict[str, set[str]]]:
    """module -> {imported module: names taken}, without self-imports."""
    known = modules()
    g: dict[str, dict[str, set[str]]] = {}
    for mod, path in known.items():
        edges = g.setdefault(mod, {})
        for target, names in imports(mod, path, known):
            if target is not None and target != mod:
                edges.setdefault(target, set()).update(names)
    return g


def cycles(g) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def layer(mod: str) -> int:
    """The layer of a module: that of the longest matching entry of :data:`LAYERS`."""
    rel = mod[len("jaxbandits"):].lstrip(".")
    best, best_len = None, -1
    for i, names in enumerate(LAYERS):
        for n in names:
            if (rel == n or rel.startswith(n + ".") or n == "") and len(n) > best_len:
                best, best_len = i, len(n)
    return best


def upward(g) -> list[str]:
    """Imports from a lower layer to a higher one."""
    return sorted(f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, e in g.items() for b in e if layer(b) > layer(a))


def private(g) -> list[str]:
    """Imports of a private (underscore) name from a module of another package (modules of one
    package may share private helpers)."""
    return sorted(f"{a} -> {b}: {', '.join(sorted(n for n in names if n.startswith('_')))}"
                  for a, e in g.items() for b, names in e.items()
                  if any(n.startswith("_") for n in names) and a.rpartition(".")[0] != b.rpartition(".")[0])


def sideways(g) -> list[str]:
    """Imports from one algorithm module into another (helpers living inside an algorithm)."""
    def concrete(m):
        return layer(m) == 5 and m.count(".") >= 3
    return sorted(f"{a} -> {b}" for a, e in g.items() for b in e if concrete(a) and concrete(b))


#: algorithm module -> the algorithm modules it builds on (a variant or configuration of their class)
FAMILIES = {
    "algorithms.fixed_confidence.oracle": {"algorithms.fixed_confidence.xy"},
    "algorithms.fixed_confidence.td_variants": {"algorithms.fixed_confidence.rage"},
    "algorithms.fixed_confidence.lingape": {"algorithms.top_m.gifa"},
    "algorithms.fixed_budget.ucb_glm": {"algorithms.fixed_budget.linucb"},
    "algorithms.fixed_budget.budget_capped": {"algorithms.fixed_confidence.lingape"},
}


def test_the_graph_is_read():
    g = graph()
    # the engine's imports (a module or a package), as a check that the reader resolves
    # ``from pkg import module`` and ``from pkg.module import name`` alike
    engine = set().union(*(e for m, e in g.items() if m == "jaxbandits.engine" or m.startswith("jaxbandits.engine.")))
    assert {"jaxbandits.algorithms.base", "jaxbandits.stats", "jaxbandits.programs"} <= engine
    assert all(layer(m) is not None for m in g), [m for m in g if layer(m) is None]


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b": set()}, "b": {"c": set()}, "c": {"a": set()}, "d": {"a": set()}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b": set()}, "b": {}}) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_upward_imports():
    assert upward(graph()) == []


def test_no_private_imports_across_packages():
    assert private(graph()) == []


def declared() -> set[str]:
    return {f"jaxbandits.{a} -> jaxbandits.{b}" for a, bs in FAMILIES.items() for b in bs}


def test_algorithm_modules_import_one_another_only_along_declared_families():
    found = set(sideways(graph()))
    assert found - declared() == set(), "move the shared helper to a layer-4 module, or declare the family"
    # the allow-list cannot rot: every declared edge exists
    assert declared() - found == set()


def test_the_checks_catch_violations():
    g = {"jaxbandits.environment": {"jaxbandits.algorithms.fixed_confidence.rage": set()},
         "jaxbandits.algorithms.fixed_confidence.rage": {"jaxbandits.design.minimax": {"_pairs"},
                                                         "jaxbandits.algorithms.fixed_confidence.xy": set()}}
    assert upward(g) == ["jaxbandits.environment (2) -> jaxbandits.algorithms.fixed_confidence.rage (5)"]
    assert private(g) == ["jaxbandits.algorithms.fixed_confidence.rage -> jaxbandits.design.minimax: _pairs"]
    assert sideways(g) == ["jaxbandits.algorithms.fixed_confidence.rage -> jaxbandits.algorithms.fixed_confidence.xy"]


def test_the_suite_order_names_existing_files():
    """conftest.LONGEST_FIRST (the order the two workers take the files in) names test files that
    exist: a renamed file would silently fall back to the end of the queue."""
    from conftest import LONGEST_FIRST

    here = Path(__file__).parent
    assert [f for f in LONGEST_FIRST if not (here / f).exists()] == []


if __name__ == "__main__":
    g = graph()
    for title, found in (("cycles", [" <-> ".join(c) for c in cycles(g)]), ("upward imports", upward(g)),
                         ("private names", private(g)), ("algorithm -> algorithm", sideways(g))):
        print(f"{title} ({len(found)}):")
        for line in found:
            print("  " + line)
