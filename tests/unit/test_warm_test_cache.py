"""scripts/warm-test-cache.py (make test's first step): the test folders split over the cores by file count."""
from __future__ import annotations

from support.scripts import script

warm = script("warm-test-cache")


def test_the_folders_are_split_into_groups_of_about_equal_files_each_folder_once():
    folders = [("tests/k8s", 50), ("tests/unit", 40), ("tests/lab", 30), ("tests/vm", 5), ("tests/model", 20)]
    two = warm.groups(folders, 2)
    assert sorted(f for g in two for f in g) == sorted(name for name, _ in folders)
    sizes = sorted(sum(dict(folders)[f] for f in g) for g in two)
    assert sizes == [70, 75], two  # largest first, each to the lighter group
    assert warm.groups(folders, 1) == [[name for name, _ in sorted(folders, key=lambda f: -f[1])]]
    assert warm.groups(folders[:1], 4) == [["tests/k8s"]]  # no empty group: a pytest of nothing would collect all
    assert warm.groups(folders, 0) == warm.groups(folders, 1)


def test_every_folder_with_a_test_file_is_collected():
    found = dict(warm.test_folders())
    on_disk = {f"tests/{p.parent.relative_to(warm.TESTS).parts[0]}" for p in warm.TESTS.rglob("test_*.py")
               if p.parent != warm.TESTS}
    assert set(found) == on_disk and all(n > 0 for n in found.values()), found
    assert not list(warm.TESTS.glob("test_*.py")), "a test file directly in tests/ would not be warmed"
