"""Shell completion generated from the command's argparse parser, loaded by the real bash, zsh and fish.

Each shell completes a command line as a person's Tab would: bash calls the completion function with
COMP_WORDS, zsh runs interactively on a pseudo-terminal (zsh_complete.zsh), fish answers `complete -C`.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from homecluster import cli, completion

HERE = Path(__file__).parent


def script(shell: str) -> str:
    done = subprocess.run([sys.executable, "-m", "homecluster", "completion", shell], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout


def bash_complete(text: str, words: list[str], cwd: Path) -> list[str]:
    source = cwd / "homecluster.bash"
    source.write_text(text)
    quoted = " ".join(f"'{w}'" for w in words)
    done = subprocess.run(["bash", "--norc", "-c", f"source {source}; COMP_WORDS=({quoted}); "
                           f"COMP_CWORD={len(words) - 1}; _homecluster; printf '%s\\n' \"${{COMPREPLY[@]}}\""],
                          capture_output=True, text=True, timeout=30, cwd=cwd, check=True)
    return done.stdout.split()


def zsh_complete(text: str, line: str, folder: Path) -> list[str]:
    (folder / "_homecluster").write_text(text)
    done = subprocess.run(["zsh", "-f", str(HERE / "zsh_complete.zsh"), str(folder), line], capture_output=True,
                          text=True, timeout=30, check=False, env={"HOME": str(folder), "TERM": "dumb",
                                                                   "PATH": "/usr/bin:/bin"})
    return done.stdout.split()


def fish_complete(text: str, line: str, folder: Path) -> list[str]:
    (folder / "homecluster.fish").write_text(text)
    done = subprocess.run(["fish", "--no-config", "-c", f"source {folder / 'homecluster.fish'}; complete -C '{line}'"],
                          capture_output=True, text=True, timeout=30, check=True, env={"HOME": str(folder),
                                                                                        "PATH": "/usr/bin:/bin"})
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


def test_bash_completes_verbs_flags_choices_and_files(tmp_path):
    text = script("bash")
    assert bash_complete(text, ["homecluster", "st"], tmp_path) == ["status"]
    assert bash_complete(text, ["homecluster", "status", "-o", ""], tmp_path) == ["text", "wide", "json", "yaml"]
    assert "--wait" in bash_complete(text, ["homecluster", "claim", "worker-01", "--w"], tmp_path)
    (tmp_path / "kubeconfig-lab").write_text("")
    assert bash_complete(text, ["homecluster", "release", "--kubeconfig", "kubeconfig-"], tmp_path) == ["kubeconfig-lab"]
    assert bash_complete(text, ["homecluster", "completion", ""], tmp_path)[:3] == ["bash", "zsh", "fish"]


def test_zsh_completes_verbs_flags_and_choices(tmp_path):
    text = script("zsh")
    assert "release" in zsh_complete(text, "homecluster rel", tmp_path)
    assert zsh_complete(text, "homecluster status -o ", tmp_path) == ["text", "wide", "json", "yaml"]
    after_slot = zsh_complete(text, "homecluster claim worker-01 --", tmp_path)
    assert {"--wait", "--output", "--dry-run", "--kubeconfig"} <= set(after_slot), after_slot


def test_fish_completes_verbs_flags_and_choices(tmp_path):
    text = script("fish")
    assert fish_complete(text, "homecluster st", tmp_path) == ["status"]
    assert sorted(fish_complete(text, "homecluster status -o ", tmp_path)) == ["json", "text", "wide", "yaml"]
    assert "--no-wait" in fish_complete(text, "homecluster release --no", tmp_path)


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_a_flag_is_completed_as_soon_as_the_parser_has_it(shell):
    """Nothing is listed by hand: every flag of every verb is in every script."""
    full = cli.parser("*", cli.commands())
    extra = argparse.ArgumentParser(prog="homecluster")
    sub = extra.add_subparsers(dest="command")
    sub.add_parser("status", help="x").add_argument("--brand-new-flag", choices=("one", "two"))
    assert "brand-new-flag" in getattr(completion, shell)(extra)
    for name, (_, flags, _) in completion.commands(full).items():
        for flag in flags:
            long = next((o for o in flag.names if o.startswith("--")), flag.names[0])
            assert long.lstrip("-") in getattr(completion, shell)(full), (shell, name, long)
