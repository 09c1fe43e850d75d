"""Imports only go down: wcoj <- indexes <- queries; nothing imports queries."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {"wcoj": set(), "indexes": {"wcoj"}, "queries": {"wcoj", "indexes"}}


def _our_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(ALLOWED)


def test_imports_only_go_down():
    bad = []
    for pkg, allowed in ALLOWED.items():
        for path in (ROOT / pkg).rglob("*.py"):
            extra = _our_imports(path) - allowed - {pkg}
            if extra:
                bad.append(f"{path.relative_to(ROOT)} imports {sorted(extra)}")
    assert not bad, "\n".join(bad)


def test_kernels_import_no_package_of_ours():
    for path in (ROOT / "wcoj" / "kernels").rglob("*.py"):
        assert not _our_imports(path), path


def _modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_only_the_table_owner_and_the_engine_reach_kernels():
    # indexes/ reaches kernels through wcoj.tables (tables) and wcoj.tickgen (tick plans);
    # queries/ through nothing: it sees Z-sets, relations and the join protocol
    bad = [f"{path.relative_to(ROOT)} imports {m}"
           for pkg in ("indexes", "queries") for path in (ROOT / pkg).rglob("*.py")
           for m in _modules(path) if m.startswith("wcoj.kernels") or m == "wcoj.kernels"]
    assert not bad, "\n".join(bad)
