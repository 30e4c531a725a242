"""The collection's requirements.txt has lower bounds only (Ansible's guidance for collections), so the versions
the tests run are stated in docs/collection.md instead; this checks that statement: every library of
requirements.txt is named there with the line(s) tested, those lines are exactly pyproject.toml's range (what
the project's venv, and so every test, installs), and the version installed here is inside them."""
from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from install_helpers import REPO

DOC = REPO / "docs" / "collection.md"
LEAD = "the tests run the ranges of `pyproject.toml`:"


def stated() -> dict[str, SpecifierSet]:
    """library -> the range docs/collection.md says the tests run ("pyghmi 1.6", "paramiko 3 to 5")."""
    text = " ".join(DOC.read_text().split())
    assert LEAD in text, f"docs/collection.md no longer says which versions the tests run ({LEAD!r})"
    said = text.split(LEAD, 1)[1].split(")", 1)[0]
    found = {}
    for item in said.split(","):
        name, low, high = re.fullmatch(r"\s*([\w.-]+) ([\d.]+)(?: to ([\d.]+))?\s*", item).groups()
        top = Version(high or low).release
        above = ".".join(map(str, (*top[:-1], top[-1] + 1)))
        found[name.lower()] = SpecifierSet(f">={low},<{above}")
    return found


def test_the_docs_state_the_versions_the_tests_run_for_every_requirement():
    lines = [line for line in (REPO / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    wanted = {Requirement(line).name.lower(): Requirement(line).specifier for line in lines}
    ranges = stated()
    assert set(ranges) == set(wanted), f"docs/collection.md states {sorted(ranges)}; requirements.txt: {sorted(wanted)}"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    installs = {Requirement(d).name.lower(): Requirement(d).specifier
                for d in (*project["dependencies"], *project["optional-dependencies"]["test"])}
    for name, spec in ranges.items():
        assert spec == installs[name], f"docs/collection.md: {name} {spec}; pyproject.toml installs {installs[name]}"
        lower = [s for s in spec if s.operator == ">="]
        assert wanted[name] == SpecifierSet(str(lower[0])), f"requirements.txt {name}{wanted[name]}, tests {lower[0]}"
        installed = metadata.version(name)
        assert Version(installed) in spec, f"{name} {installed} is installed, outside the stated {spec}"
