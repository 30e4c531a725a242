"""The GitOps lab's parts that need no cluster (homecluster_lab.k8s.gitops): the Git server a real git client
fetches from over smart HTTP, the pool's files, and `--gitops` refused without the real control plane."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from homecluster_lab.config import LabConfig, LabError
from homecluster_lab.k8s.gitops import pool_repo
from homecluster_lab.k8s.gitops.gitserver import GitServer


@pytest.mark.asyncio
async def test_a_git_client_clones_and_pulls_each_pushed_commit_over_smart_http(tmp_path) -> None:
    async with GitServer(tmp_path / "git") as server:
        first = server.commit({"pool/a.yaml": "a: 1\n"}, "first")
        clone = tmp_path / "reader"
        done = subprocess.run(["git", "-c", "protocol.version=0", "clone", "-q", server.url, str(clone)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (clone / "pool/a.yaml").read_text() == "a: 1\n"
        second = server.commit({"pool/b.yaml": "b: 2\n"}, "second", remove=["pool/a.yaml"])
        assert second != first
        done = subprocess.run(["git", "-C", str(clone), "pull", "-q"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert not (clone / "pool/a.yaml").exists() and (clone / "pool/b.yaml").read_text() == "b: 2\n"
        server.revert_last()
        subprocess.run(["git", "-C", str(clone), "pull", "-q"], check=True, capture_output=True, timeout=60)
        assert (clone / "pool/a.yaml").exists() and not (clone / "pool/b.yaml").exists()


@pytest.mark.asyncio
async def test_nothing_can_push_over_http(tmp_path) -> None:
    async with GitServer(tmp_path / "git") as server:
        server.commit({"x": "1\n"}, "first")
        clone = tmp_path / "writer"
        subprocess.run(["git", "clone", "-q", server.url, str(clone)], check=True, capture_output=True, timeout=60)
        (clone / "x").write_text("2\n")
        subprocess.run(["git", "-C", str(clone), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "x"],
                       check=True, capture_output=True, timeout=60)
        done = subprocess.run(["git", "-C", str(clone), "push", "-q"], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert server.head() != subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True,
                                               text=True, check=True).stdout.strip()


def test_the_pool_files_list_the_group_and_every_slot() -> None:
    group = {"kind": "Group", "metadata": {"name": "workers"}}
    slots = {"worker-02": {"kind": "Node", "metadata": {"name": "worker-02"}},
             "worker-01": {"kind": "Node", "metadata": {"name": "worker-01"}}}
    files = pool_repo.files(group, slots)
    listed = yaml.safe_load(files[pool_repo.KUSTOMIZATION_FILE])["resources"]
    assert listed == ["group.yaml", "slots/worker-01.yaml", "slots/worker-02.yaml"]
    assert all(f"{pool_repo.FOLDER}/{path}" in files for path in listed)
    assert yaml.safe_load(files[pool_repo.slot_file("worker-01")]) == slots["worker-01"]


def test_gitops_needs_the_real_control_plane() -> None:
    with pytest.raises(LabError, match="--control-plane kubernetes"):
        LabConfig(gitops=True).validate()
    LabConfig(gitops=True, control_plane="kubernetes").validate()
