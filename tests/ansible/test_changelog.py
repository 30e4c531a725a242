"""The collection's changelog (antsibull-changelog): the fragments and changelogs/changelog.yaml lint clean,
CHANGELOG.rst is what `antsibull-changelog generate` makes of changelog.yaml (a hand edit or a forgotten
regeneration fails), and the version galaxy.yml builds has its release entry.

Add a fragment under changelogs/fragments/ with each change; at release time run
`antsibull-changelog release --version X.Y.Z` (docs/collection.md#changelog)."""
from __future__ import annotations

import shutil
import subprocess

import yaml

from hc_ansible import REPO, VENV_BIN

ANTSIBULL_CHANGELOG = str(VENV_BIN / "antsibull-changelog")


def run(*args, cwd=REPO):
    return subprocess.run([ANTSIBULL_CHANGELOG, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_fragments_and_changelog_yaml_lint_clean():
    lint = run("lint")
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    yaml_lint = run("lint-changelog-yaml", "changelogs/changelog.yaml")
    assert yaml_lint.returncode == 0 and not yaml_lint.stdout.strip(), yaml_lint.stdout + yaml_lint.stderr


def test_changelog_rst_is_generated_from_changelog_yaml(tmp_path):
    # generate needs only galaxy.yml and changelogs/ (the plugins' descriptions are in changelog.yaml)
    shutil.copy2(REPO / "galaxy.yml", tmp_path)
    (tmp_path / "changelogs").mkdir()
    for name in ("config.yaml", "changelog.yaml"):
        shutil.copy2(REPO / "changelogs" / name, tmp_path / "changelogs")
    generated = run("generate", cwd=tmp_path)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert (REPO / "CHANGELOG.rst").read_text() == (tmp_path / "CHANGELOG.rst").read_text(), (
        "CHANGELOG.rst is stale: run `.venv/bin/antsibull-changelog generate` and commit the result")


def test_the_version_galaxy_yml_builds_has_a_release_entry():
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    releases = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())["releases"]
    assert version in releases, "galaxy.yml builds %s, which changelogs/changelog.yaml has no release for" % version
    assert "v%s" % version in (REPO / "CHANGELOG.rst").read_text()
