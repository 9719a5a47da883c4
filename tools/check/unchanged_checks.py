#!/usr/bin/env python3
"""Lists the check files of a step that `make test` need not run again.

A check file (test_*.cpp) of step N is "carried unchanged" when it and every file of the step
it depends on are byte for byte the same in step N-1: its results in step N-1 then hold for
step N too. The dependencies are read from the compiler's .d files: the headers a source
includes, then for each header X.h its X.cpp / X.cu, then their headers, and so on.

    tools/check/unchanged_checks.py BUILD_DIR STEP_DIR PREVIOUS_STEP_DIR
prints the names, comma-separated (empty when every check must run).
"""
import filecmp
import sys
from pathlib import Path


def included_files(depfile: Path, step_dir: Path) -> set[str]:
    """The files of step_dir named in a make dependency file (the .d gcc/nvcc write)."""
    if not depfile.exists():
        return set()
    names = set()
    for word in depfile.read_text().replace("\\\n", " ").split():
        path = Path(word)  # the target ("x.o:") and the phony "header.h:" lines end in ':'
        if path.parent == step_dir and path.suffix in (".h", ".inc", ".cpp", ".cu"):
            names.add(path.name)
    return names


def dependencies(check: str, build_dir: Path, step_dir: Path) -> set[str]:
    seen, pending = set(), [check]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        stem = Path(name).stem
        if name.endswith(".h"):
            pending += [stem + ext for ext in (".cpp", ".cu") if (step_dir / (stem + ext)).exists()]
        else:
            pending += included_files(build_dir / (stem + ".d"), step_dir)
    return seen


def main() -> None:
    build_dir, step_dir, previous_dir = (Path(arg) for arg in sys.argv[1:4])
    unchanged = []
    for check in sorted(step_dir.glob("test_*.cpp")):
        files = dependencies(check.name, build_dir, step_dir)
        if all((previous_dir / name).exists()
               and filecmp.cmp(step_dir / name, previous_dir / name, shallow=False)
               for name in files):
            unchanged.append(check.name)
    print(",".join(unchanged))


if __name__ == "__main__":
    main()
