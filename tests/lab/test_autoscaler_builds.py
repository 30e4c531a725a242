"""Finding cluster-autoscaler binaries (HOMECLUSTER_CLUSTER_AUTOSCALER and the cache folder) and the flags the lab
runs them with (config/autoscaler's, with the lab's clocks). Real files in a temporary folder, no binary runs."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from homecluster_lab import topology
from homecluster_lab.k8s import autoscaler_builds as builds
from homecluster_lab.k8s import autoscaler_flags as flags
from homecluster_lab.k8s.binaries import REPO


def _binary(path: Path, runnable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755 if runnable else 0o644)
    return path


def test_the_variable_and_the_cache_folder_are_both_searched_oldest_release_first(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cached_new = _binary(cache / "1.36.1" / "cluster-autoscaler")
    _binary(cache / "v1.34.5" / "cluster-autoscaler")
    own = _binary(tmp_path / "mine" / "ca")
    named = _binary(tmp_path / "opt" / "1.35.2" / "cluster-autoscaler")
    env = {builds.ENV: os.pathsep.join([f"1.33.0={own}", str(named), str(cached_new)])}
    found = builds.discover(env, cache)
    assert [(b.release, b.path) for b in found] == [
        ("1.33.0", own), ("1.34.5", cache / "v1.34.5" / "cluster-autoscaler"), ("1.35.2", named),
        ("1.36.1", cached_new)]  # the cache's 1.36.1 is the variable's: counted once


def test_a_release_named_twice_keeps_the_variables_binary(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _binary(cache / "1.36.1" / "cluster-autoscaler")
    mine = _binary(tmp_path / "elsewhere" / "cluster-autoscaler")
    found = builds.discover({builds.ENV: f"1.36.1={mine}"}, cache)
    assert [(b.release, b.path) for b in found] == [("1.36.1", mine)]


def test_without_a_release_in_its_name_a_binary_is_named_by_its_path(tmp_path: Path) -> None:
    own = _binary(tmp_path / "bin" / "cluster-autoscaler")
    assert [b.release for b in builds.discover({builds.ENV: str(own)}, tmp_path / "none")] == [str(own)]


def test_entries_that_are_no_runnable_file_are_left_out_and_said(tmp_path: Path, monkeypatch) -> None:
    plain = _binary(tmp_path / "1.35.2" / "cluster-autoscaler", runnable=False)
    env = {builds.ENV: os.pathsep.join([str(plain), str(tmp_path / "absent"), ""])}
    assert builds.discover(env, tmp_path / "none") == []
    monkeypatch.setenv(builds.ENV, env[builds.ENV])
    monkeypatch.setenv("HOME", str(tmp_path))
    reason = builds.missing_reason()
    assert builds.ENV in reason and f"{tmp_path}/.cache/homecluster/cluster-autoscaler/<release>" in reason
    assert f"names {plain}, which is not an executable file" in reason
    assert f"names {tmp_path / 'absent'}, which is not an executable file" in reason


def test_nothing_found_says_the_variable_and_the_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(builds.ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert builds.discover() == []
    assert builds.missing_reason().startswith(f"no cluster-autoscaler binary found: set {builds.ENV}")


def test_the_lab_runs_the_shipped_args_with_its_own_files_and_clocks(tmp_path: Path) -> None:
    shipped = flags.shipped_args()
    argv = flags.argv(Path("/ca"), cloud_config=tmp_path / "cc", kubeconfig=tmp_path / "kc", namespace="lab-ns",
                      metrics_port=8085, clocks=flags.Clocks(scan_interval=2, unneeded=10))
    named = [a.split("=", 1)[0] for a in argv[1:]]
    # every flag once but the repeatable --startup-taint
    assert len([n for n in named if n != flags.STARTUP_TAINT]) == len(set(named) - {flags.STARTUP_TAINT})
    assert f"--cloud-config={tmp_path / 'cc'}" in argv and "--namespace=lab-ns" in argv
    assert "--scan-interval=2s" in argv and "--scale-down-unneeded-time=10s" in argv
    assert "--cloud-config=/config/cloud-config" not in argv and "--namespace=$(POD_NAMESPACE)" not in argv
    for arg in shipped:  # everything else as shipped: the provider, the expander, the startup taints
        if arg.split("=", 1)[0] not in ("--cloud-config", "--namespace", "--max-node-provision-time", "--v",
                                        "--scale-down-delay-after-add", "--scale-down-unneeded-time"):
            assert arg in argv, arg


def test_config_autoscaler_passes_the_labs_readiness_taint_as_a_startup_taint() -> None:
    """The lab's Group declares the readiness taint the docs' example uses; the shipped Deployment must name it
    (the real-autoscaler test tests/k8s/test_k8s_autoscaler.py shows what happens without)."""
    group = topology.group("workers", 3, {"cpu": "4"})
    wanted = {t["key"] for t in group["spec"]["nodeReadinessTaints"]}
    assert wanted <= set(flags.startup_taints(flags.shipped_args())), flags.shipped_args()


def test_the_lab_cloud_config_names_the_reported_address() -> None:
    assert yaml.safe_load(flags.cloud_config("127.0.0.1:40123")) == {"address": "127.0.0.1:40123",
                                                                    "grpc_timeout": "10s"}
    assert (REPO / "config" / "autoscaler" / "deployment.yaml") == flags.DEPLOYMENT


def _lab_args(*argv: str):
    import argparse

    from homecluster_lab import cli
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_lab_refuses_an_autoscaler_it_cannot_run_naming_the_fix(tmp_path: Path, capsys) -> None:
    from homecluster_lab import cli
    ca = _binary(tmp_path / "1.36.1" / "cluster-autoscaler")
    cases = [((f"--autoscaler={ca}",), "--autoscaler needs --control-plane kubernetes"),
             ((f"--autoscaler={ca}", "--control-plane=kubernetes", "--no-operator"), "drop --no-operator"),
             ((f"--autoscaler={tmp_path / 'absent'}", "--control-plane=kubernetes"),
              "name one cluster-autoscaler binary")]
    for argv, said in cases:
        assert cli.run(_lab_args(*argv)) == cli.EXIT_USAGE, argv
        assert said in capsys.readouterr().err, argv


def test_lab_autoscaler_argument_takes_a_path_a_release_or_newest(tmp_path: Path, monkeypatch) -> None:
    ca = _binary(tmp_path / "opt" / "cluster-autoscaler")
    assert builds.choose(f"1.35.2={ca}") == builds.Build("1.35.2", ca)
    monkeypatch.setenv("HOME", str(tmp_path))
    newest = _binary(tmp_path / ".cache" / "homecluster" / "cluster-autoscaler" / "1.36.1" / "cluster-autoscaler")
    _binary(tmp_path / ".cache" / "homecluster" / "cluster-autoscaler" / "1.34.5" / "cluster-autoscaler")
    monkeypatch.delenv(builds.ENV, raising=False)
    assert builds.choose("newest") == builds.Build("1.36.1", newest)
