"""What scripts/build-images.sh counts as an image's inputs, and what it does where it cannot build.

An image is built again only when its input key changes (docs/images.md): the key must cover every file the
Containerfile copies from the build context, or a change to an uncovered file would leave a stale image that the
build calls up to date. `make test` runs the script with --if-possible: on a machine that cannot build (no
buildah, not root) it says why and succeeds, and the tests that run images skip, naming it. No image is built.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import runc_container as rc

SCRIPT = rc.REPO / "scripts" / "build-images.sh"


def _copy_sources(containerfile: Path) -> set[str]:
    """The build-context paths the Containerfile's COPY instructions read (not `COPY --from=<stage>`)."""
    sources: set[str] = set()
    for line in containerfile.read_text().splitlines():
        words = line.split()
        if not words or words[0] != "COPY" or any(w.startswith("--from") for w in words):
            continue
        sources.update(w.rstrip("/") for w in words[1:-1] if not w.startswith("--"))
    return sources


def _keyed_sources(name: str) -> set[str]:
    """The paths the script's key hashes for the image (its <NAME>_COPIES), and the collection tarball the runner's
    key reads."""
    text = SCRIPT.read_text()
    found = re.search(rf'^{name.upper()}_COPIES="([^"]*)"$', text, re.M)
    assert found, f"build-images.sh names no {name.upper()}_COPIES"
    listed = set(found.group(1).split())
    if name == "runner" and 'content build/homecluster-infra.tar.gz' in text:
        listed.add("build/homecluster-infra.tar.gz")
    return listed


def test_every_file_a_containerfile_copies_is_in_its_input_key():
    for name in ("controller", "runner"):
        copied = _copy_sources(rc.REPO / "images" / name / "Containerfile")
        assert copied, f"images/{name}/Containerfile copies nothing?"
        missing = copied - _keyed_sources(name)
        assert not missing, (f"images/{name}/Containerfile copies {sorted(missing)}, which build-images.sh's "
                             f"inputs_key does not hash: a change to them would not rebuild the image")


def _path_without(tmp_path: Path, *tools: str) -> str:
    """A PATH holding every program of the current PATH but `tools`."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for entry in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(entry):
            continue
        for program in os.listdir(entry):
            target = folder / program
            if program not in tools and not target.exists():
                target.symlink_to(Path(entry) / program)
    return str(folder)


def test_where_buildah_is_missing_if_possible_says_why_and_succeeds_and_the_plain_build_fails(tmp_path):
    env = {**os.environ, "PATH": _path_without(tmp_path, "buildah"), "HOMECLUSTER_IMAGES_DIR": str(tmp_path / "out")}
    tolerant = subprocess.run(["bash", str(SCRIPT), "--if-possible"], env=env, capture_output=True, text=True,
                              timeout=60)
    assert tolerant.returncode == 0, tolerant.stdout + tolerant.stderr
    assert tolerant.stdout.strip() == ("images: not built (buildah is missing: scripts/system-deps.sh installs it "
                                       "(make images runs it)); the tests that run them skip, naming it")
    strict = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert strict.returncode == 1
    assert strict.stderr.strip() == "error: buildah is missing: scripts/system-deps.sh installs it (make images runs it)"
    assert not (tmp_path / "out").exists(), "nothing is made where nothing can be built"
