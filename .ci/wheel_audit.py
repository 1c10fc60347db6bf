"""Proves a wheel's manylinux2014 tag (glibc 2.17) from the extension itself, for any architecture.

    .ci/wheel_audit.py dist/ducklake_datafusion-*.whl     # with the wheel venv's python (make wheel)

For each wheel, its extension's architecture (the ELF header) must be the one its file name
names, and:
- `auditwheel show` must find it consistent with manylinux_2_17 for that architecture (the
  policy pip's own checks follow: libraries and symbol versions);
- its symbol table, read here with pyelftools (auditwheel's own ELF reader), must need only
  the manylinux2014 policy's libraries and symbol versions (GLIBC_2.17 at most), and every other
  undefined symbol must be Python's (an abi3 extension links no libpython): a libc function that
  the old glibc lacks would show up unversioned, which neither the linker nor auditwheel report.
This is all that can be checked of a wheel for another architecture (aarch64 on an x86_64
machine): it cannot be imported here. Prints a summary per wheel; exits 1 on any failure.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import auditwheel
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection

POLICY = "manylinux_2_17"  # manylinux2014
MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}


def policy() -> dict:
    path = Path(auditwheel.__file__).parent / "policy" / "manylinux-policy.json"
    return next(p for p in json.loads(path.read_text()) if p["name"] == POLICY)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def audit_extension(so: Path, arch: str, rules: dict) -> tuple[list[str], str]:
    """The problems of one shared object, and its highest GLIBC version needed."""
    problems = []
    with so.open("rb") as f:
        elf = ELFFile(f)
        machine = MACHINES.get(elf["e_machine"], elf["e_machine"])
        if machine != arch:
            problems.append(f"{so.name} is built for {machine}, its wheel is named {arch}")
            return problems, "?"
        dynamic = next(s for s in elf.iter_sections() if isinstance(s, DynamicSection))
        needed = [t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
        allowed_libs = set(rules["lib_whitelist"]) | {
            "ld-linux-x86-64.so.2",
            "ld-linux-aarch64.so.1",
        }
        problems += [
            f"{so.name} needs {lib}, outside {POLICY}" for lib in needed if lib not in allowed_libs
        ]

        allowed = rules["symbol_versions"][arch]
        glibc = []
        verneed = next((s for s in elf.iter_sections() if isinstance(s, GNUVerNeedSection)), None)
        for lib, versions in verneed.iter_versions() if verneed else ():
            for v in versions:
                prefix, _, number = v.name.partition("_")
                if prefix == "GLIBC":
                    glibc.append(number)
                if number not in allowed.get(prefix, ()):
                    problems.append(
                        f"{so.name} needs {v.name} from {lib.name}, newer than {POLICY}"
                    )

        # Undefined symbols without a version: only Python's C API may be resolved that way.
        dynsym = elf.get_section_by_name(".dynsym")
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        for i, sym in enumerate(dynsym.iter_symbols()):
            if i == 0 or sym["st_shndx"] != "SHN_UNDEF" or sym["st_info"]["bind"] == "STB_WEAK":
                continue
            index = versym.get_symbol(i)["ndx"] if versym else "VER_NDX_LOCAL"
            if index in ("VER_NDX_LOCAL", "VER_NDX_GLOBAL") and not sym.name.startswith(
                ("Py", "_Py")
            ):
                problems.append(f"{so.name}: undefined symbol {sym.name} has no version")
    return problems, max(glibc, key=version_key) if glibc else "none"


def audit(wheel: Path, rules: dict) -> list[str]:
    match = re.search(r"manylinux2014_(\w+?)\.manylinux_2_17_(\w+)\.whl$", wheel.name)
    if not match or match[1] != match[2]:
        return [f"{wheel.name} is not named manylinux2014 / manylinux_2_17"]
    arch = match[1]
    problems = []

    # Its exit code and its verdict are both judged below.
    show = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)],
        check=False,
        capture_output=True,
        text=True,
    )
    text = " ".join((show.stdout + show.stderr).split())
    tag = re.search(r'consistent with the following platform tag: "([^"]+)"', text)
    print(f"{wheel.name}: auditwheel show: {tag[1] if tag else text}")
    if show.returncode or not tag or tag[1] != f"{POLICY}_{arch}":
        problems.append(
            f"auditwheel show does not find {wheel.name} consistent with {POLICY}_{arch}"
        )

    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as zf:
        libs = [n for n in zf.namelist() if n.endswith(".so") or ".so." in n]
        if not libs:
            problems.append(f"{wheel.name} has no extension")
        for name in libs:
            so = Path(zf.extract(name, tmp))
            found, glibc = audit_extension(so, arch, rules)
            problems += found
            print(f"{wheel.name}: {name}: {arch}, highest GLIBC version needed {glibc}")
    return problems


def main(paths: list[str]) -> int:
    if not paths:
        print("usage: wheel_audit.py WHEEL...", file=sys.stderr)
        return 2
    rules = policy()
    problems = [p for path in paths for p in audit(Path(path), rules)]
    for problem in problems:
        print(f"wheel_audit: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
