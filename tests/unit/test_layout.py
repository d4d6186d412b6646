"""The import rules of ARCHITECTURE.md (Layout), read from the source with `ast`: every `import` and
`from ... import` statement, at module level and inside functions, plus `importlib.import_module` and
`__import__` calls with a literal name. The rules:

- the pure stages (frontend, graph, fuse, codegen, sched) and the shared top-level modules import nothing
  from engine, runtime or tools, nor ray, cupy or pyopencl;
- ray only in engine's Ray backends (engine/ray_backend.py, engine/ray_*.py) and runtime/actor.py;
- cupy only in runtime/cuda.py, pyopencl only in runtime/opencl.py (the benchmark's CuPy baseline is the one
  named exception: CuPy is what it compares against there, not a device of ours);
- the actor side (runtime) imports only the shared top-level modules and itself, never the driver's stages;
- the driver reaches the actor side through three doors only: runtime.worker (the in-process backend's
  workers), runtime.actor (the Ray backend's actors) and runtime.discover (what devices this machine has);
- no import cycles between modules, counting function-level imports (a lazy import hides a cycle, it does
  not remove it).

And two rules about process state: no module reads the environment when it is imported (settings are read
when a session starts, or when asked), and module globals are rebound (`global`) only in the two holders of
process state: engine/session.py (the running session) and context.py (the front end's way to it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "zyx_dist"
PURE = ("frontend", "graph", "fuse", "codegen", "sched")
SHARED = ("dtypes", "errors", "protocol", "config", "context", "_util")
RAY_ALLOWED = ("engine.ray_backend", "runtime.actor")
DRIVER_DOORS = ("runtime.worker", "runtime.actor", "runtime.discover")
# module -> the third-party device libraries it alone may import (besides ray, ruled above)
DEVICE_LIBS = {"cupy": ("runtime.cuda", "tools.bench"), "pyopencl": ("runtime.opencl",)}


def module_name(path: Path) -> str:
    """`zyx_dist.codegen.render` for zyx_dist/codegen/render.py, `zyx_dist.frontend` for its __init__.py."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a relative import's module."""
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> list[tuple[str, int]]:
    """(absolute module name, line) for every import in the source of `module`; `from a import b` names
    `a.b` when that is a module of the package, else `a`."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            for a in node.names:
                full = f"{base}.{a.name}"
                out.append((full if full in known else base, node.lineno))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called in ("import_module", "__import__"):
                out.append((node.args[0].value, node.lineno))
    return out


def _graph() -> tuple[dict[str, Path], dict[str, str], dict[str, list[tuple[str, int]]]]:
    files = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    sources = {m: p.read_text() for m, p in files.items()}
    known = set(files)
    return files, sources, {m: imports_of(sources[m], m, p.name == "__init__.py", known) for m, p in files.items()}


FILES, SOURCES, IMPORTS = _graph()


def _local(module: str) -> str:
    """`codegen.render` for `zyx_dist.codegen.render`."""
    return module.removeprefix("zyx_dist.").removeprefix("zyx_dist")


def _in(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _violations(rule) -> list[str]:
    """`file:line imports name` for every import that `rule(local module, imported name)` refuses."""
    out = []
    for module, found in IMPORTS.items():
        for name, line in found:
            if rule(_local(module), name):
                out.append(f"{FILES[module].relative_to(ROOT)}:{line} imports {name}")
    return out


def test_the_reader_sees_every_kind_of_import():
    src = "import a.b\nfrom . import c\nfrom ..d import e\ndef f():\n    from .g import h\n    import importlib\n" \
          "    importlib.import_module('cupy')\n"
    found = [n for n, _ in imports_of(src, "zyx_dist.codegen.x", False, {"zyx_dist.codegen.c"})]
    assert sorted(found) == sorted(["a.b", "zyx_dist.codegen.c", "zyx_dist.d", "zyx_dist.codegen.g", "importlib", "cupy"])
    assert len(FILES) > 40 and "zyx_dist.runtime.worker" in FILES


@pytest.mark.parametrize("stage", PURE + SHARED)
def test_pure_stages_import_no_runtime_engine_or_device_library(stage):
    banned = ("zyx_dist.engine", "zyx_dist.runtime", "zyx_dist.tools", "ray", "cupy", "pyopencl")
    bad = _violations(lambda m, name: _in(m, (stage,)) and _in(name, banned))
    assert not bad, "a pure module reaches the runtime:\n" + "\n".join(bad)


def test_ray_only_in_the_ray_backends_and_the_actor():
    def refused(m: str, name: str) -> bool:
        allowed = m in RAY_ALLOWED or (m.startswith("engine.ray_") and m.count(".") == 1)
        return _in(name, ("ray",)) and not allowed

    bad = _violations(refused)
    assert not bad, "ray imported outside engine/ray_*.py and runtime/actor.py:\n" + "\n".join(bad)


@pytest.mark.parametrize("lib", sorted(DEVICE_LIBS))
def test_device_libraries_only_in_their_runtime_file(lib):
    bad = _violations(lambda m, name: _in(name, (lib,)) and m not in DEVICE_LIBS[lib])
    assert not bad, f"{lib} imported outside {', '.join(DEVICE_LIBS[lib])}:\n" + "\n".join(bad)


def test_the_actor_side_imports_no_driver_stage():
    driver = tuple(f"zyx_dist.{s}" for s in (*PURE, "engine", "tools"))
    bad = _violations(lambda m, name: _in(m, ("runtime",)) and _in(name, driver + ("zyx_dist.context",)))
    assert not bad, "runtime (actor side) imports driver code:\n" + "\n".join(bad)


def test_the_driver_reaches_the_actor_side_through_its_three_doors():
    doors = tuple(f"zyx_dist.{d}" for d in DRIVER_DOORS)
    bad = _violations(lambda m, name: not _in(m, ("runtime",)) and _in(name, ("zyx_dist.runtime",))
                      and name != "zyx_dist.runtime" and not _in(name, doors))
    assert not bad, f"driver code imports runtime modules other than {', '.join(DRIVER_DOORS)}:\n" + "\n".join(bad)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or with a self-import), by Tarjan's
    algorithm written with an explicit stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in edges[v]:
                    out.append(sorted(comp))
    return out


def _path(edges: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One cycle through the component's first module, for the message: a breadth-first walk back to it."""
    start, members = comp[0], set(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if v != start else [start, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def test_cycle_finder_names_the_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    comps = _cycles(edges)
    assert comps == [["a", "b", "c"], ["e"]]
    assert _path(edges, comps[0]) == ["a", "b", "c", "a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """Edges between the package's modules, as written (a module's own parent packages are imported
    before it by Python itself, so only an explicit import of one counts)."""
    edges: dict[str, set[str]] = {m: set() for m in IMPORTS}
    for module, found in IMPORTS.items():
        for name, _ in found:
            if name in edges:
                edges[module].add(name)
    cycles = [" -> ".join(_local(m) or "zyx_dist" for m in _path(edges, c)) for c in _cycles(edges)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


GLOBAL_HOLDERS = ("engine.session", "context")


def _module_level(tree: ast.Module):
    """The nodes that run when the module is imported: everything outside function bodies."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(node.decorator_list if not isinstance(node, ast.Lambda) else [])
            stack.extend(d for d in getattr(node.args, "defaults", []) + getattr(node.args, "kw_defaults", []) if d)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _environment_reads(source: str) -> list[int]:
    """Lines where `os.environ` / `os.getenv` run at import."""
    return [node.lineno for node in _module_level(ast.parse(source)) if isinstance(node, ast.Attribute)
            and node.attr in ("environ", "getenv") and isinstance(node.value, ast.Name) and node.value.id == "os"]


def test_no_module_reads_the_environment_at_import():
    src = "import os\nX = int(os.environ.get('A', '1'))\ndef f(y=os.getenv('B')):\n    return os.environ\n"
    assert sorted(_environment_reads(src)) == [2, 3]  # the default is evaluated at import, the body is not
    bad = [f"{path.relative_to(ROOT)}:{line} reads the environment at import"
           for module, path in FILES.items() for line in _environment_reads(SOURCES[module])]
    assert not bad, "read the environment when a session starts instead:\n" + "\n".join(bad)


def test_module_globals_are_rebound_only_by_the_holders_of_process_state():
    bad = []
    for module, path in FILES.items():
        for node in ast.walk(ast.parse(SOURCES[module])):
            if isinstance(node, ast.Global) and _local(module) not in GLOBAL_HOLDERS:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} rebinds {', '.join(node.names)}")
    assert not bad, "module state outside engine/session.py and context.py:\n" + "\n".join(bad)
