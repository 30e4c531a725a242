"""Pure readers of apt's text output: which packages, which versions, which file names.

Kept free of I/O so the rules (which kernel the meta-package points at, which dependencies are
shared libraries we must carry into the guest) are tested on fixed text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

KERNEL_META_PACKAGE = "linux-image-cloud-amd64"
_KERNEL_PACKAGE = re.compile(r"^linux-image-(\d[^\s]*)-cloud-amd64$")


@dataclass(frozen=True)
class PackageInfo:
    """One stanza of `apt-cache show --no-all-versions`: the candidate apt would install."""

    name: str
    version: str
    architecture: str
    depends: tuple[str, ...] = field(default=())

    @property
    def deb_filename(self) -> str:
        """The file name `apt-get download` gives this package (":" in the epoch becomes "%3a")."""
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.architecture}.deb"


def parse_show(text: str) -> dict[str, PackageInfo]:
    """Parse `apt-cache show --no-all-versions` output into packages by name.

    Depends and Pre-Depends are reduced to package names; of an alternative ("a | b") only the
    first is kept, which is what apt would try first.
    """
    packages: dict[str, PackageInfo] = {}
    for stanza in re.split(r"\n\s*\n", text.strip()):
        fields = _fields(stanza)
        if "Package" not in fields:
            continue
        depends = _names(fields.get("Pre-Depends", "")) + _names(fields.get("Depends", ""))
        info = PackageInfo(
            name=fields["Package"],
            version=fields.get("Version", ""),
            architecture=fields.get("Architecture", "amd64"),
            depends=tuple(depends),
        )
        packages.setdefault(info.name, info)
    return packages


def _fields(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    last = None
    for line in stanza.splitlines():
        if line[:1] in (" ", "\t") and last:
            fields[last] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            last = key.strip()
            fields[last] = value.strip()
    return fields


def _names(depends: str) -> list[str]:
    names = []
    for clause in depends.split(","):
        first = clause.split("|")[0].strip()
        if first:
            names.append(re.split(r"[\s(:]", first, maxsplit=1)[0])
    return names


def kernel_package(meta: PackageInfo) -> str:
    """The versioned kernel package the cloud meta-package depends on, e.g. linux-image-6.1.0-57-cloud-amd64."""
    for name in meta.depends:
        if _KERNEL_PACKAGE.match(name):
            return name
    raise ValueError(
        f"package {meta.name} {meta.version}: no dependency named linux-image-<version>-cloud-amd64 in "
        f"{list(meta.depends)}; run `apt-get update` or check the Debian sources"
    )


def kernel_release(package_name: str) -> str:
    """The kernel release (the modules folder name) of a kernel package: 6.1.0-57-cloud-amd64."""
    match = _KERNEL_PACKAGE.match(package_name)
    if not match:
        raise ValueError(f"{package_name!r} is not a linux-image-<version>-cloud-amd64 package name")
    return package_name[len("linux-image-"):]


def is_library_package(name: str) -> bool:
    """True for the packages that ship shared libraries a guest binary may need (lib*, zlib1g)."""
    return name.startswith("lib") or name == "zlib1g"


def library_closure(root: str, packages: dict[str, PackageInfo]) -> list[str]:
    """The library packages `root` depends on, directly or through other library packages.

    `packages` must hold every package reached so far; names missing from it are returned too,
    so the caller can look them up and call again until the result stops growing.
    """
    seen: list[str] = []
    todo = [d for d in packages[root].depends if is_library_package(d)] if root in packages else []
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.append(name)
        info = packages.get(name)
        if info:
            todo.extend(d for d in info.depends if is_library_package(d) and d not in seen)
    return seen
