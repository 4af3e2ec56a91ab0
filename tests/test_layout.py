"""tests/memory mirrors the memory package (issue 16): a test module sits in the directory of the
source package it tests, so tests for memory/api/ live in tests/memory/api/, and so on.

Rules, checked on the files as they are on disk (no imports, no database):
- every directory under tests/memory is a package (has __init__.py) whose counterpart under memory/
  is a package too;
- a test module never names a subpackage of its level in a prefix (tests/memory/test_api_x.py or
  test_service_x.py belongs in tests/memory/api/ or tests/memory/services/ as test_x.py);
- no top-level tests/<name> stands for a memory subpackage (tests/recall belongs in tests/memory/recall).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "memory"
SOURCE = ROOT / "memory"
# Prefixes that spell a subpackage differently from its directory name.
ALIASES = {"service": "services"}
# Data directories beside the tests (read by path, not imported).
DATA_DIRS = {"__pycache__", "fixtures"}


def _directories(tests: Path = TESTS) -> list[Path]:
    return [
        tests,
        *(
            d
            for d in sorted(tests.rglob("*"))
            if d.is_dir() and not DATA_DIRS & set(d.relative_to(tests).parts)
        ),
    ]


def misplaced(tests: Path = TESTS, source: Path = SOURCE) -> list[str]:
    problems = []
    for directory in _directories(tests):
        rel = directory.relative_to(tests)
        counterpart = source / rel
        if not (directory / "__init__.py").is_file():
            problems.append(f"{directory.relative_to(tests.parent)} has no __init__.py")
        if not (counterpart / "__init__.py").is_file():
            problems.append(f"{directory.relative_to(tests.parent)} mirrors no package (no memory/{rel})")
            continue
        subpackages = {p.parent.name for p in counterpart.glob("*/__init__.py")}
        for module in sorted(directory.glob("test_*.py")):
            prefix = module.stem.removeprefix("test_").split("_", 1)[0]
            package = ALIASES.get(prefix, prefix)
            if package in subpackages and module.stem != f"test_{prefix}":
                problems.append(
                    f"{module.relative_to(tests.parent)} belongs in {(directory / package).relative_to(tests.parent)}/"
                )
    return problems


def test_tests_memory_mirrors_the_memory_package():
    assert TESTS.is_dir() and SOURCE.is_dir()
    assert misplaced() == []


def test_no_top_level_test_dir_stands_for_a_memory_subpackage():
    subpackages = {p.parent.name for p in SOURCE.glob("*/__init__.py")}
    top_level = {d.name for d in (ROOT / "tests").iterdir() if (d / "__init__.py").is_file()}
    assert top_level & subpackages == set()


def test_the_check_flags_a_misplaced_module_and_an_unmirrored_directory(tmp_path):
    source, tests = tmp_path / "memory", tmp_path / "tests" / "memory"
    for package in (source, source / "api", source / "services"):
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    tests.mkdir(parents=True)
    (tests / "__init__.py").write_text("")
    (tests / "test_conf.py").write_text("")
    assert misplaced(tests, source) == []

    (tests / "test_api_keys.py").write_text("")
    (tests / "test_service_tree.py").write_text("")
    (tests / "nowhere").mkdir()
    assert misplaced(tests, source) == [
        "memory/test_api_keys.py belongs in memory/api/",
        "memory/test_service_tree.py belongs in memory/services/",
        "memory/nowhere has no __init__.py",
        "memory/nowhere mirrors no package (no memory/nowhere)",
    ]
