"""`--help` says what each verb and flag does and shows an example, as a newcomer reads it."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from homecluster import cli
from homecluster.model.settings import Settings

VERBS = ("status", "claim", "release", "run", "completion")


def help_text(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "homecluster", *args, "--help"], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "COLUMNS": "200"})
    return done.stdout


def test_the_top_level_help_says_what_it_is_with_examples_and_exit_codes():
    text = help_text()
    assert "power home-lab machines on and off for the cluster-autoscaler" in text
    assert "examples:\n  homecluster status" in text and "homecluster claim worker-01 --wait" in text
    assert "3 timed out, 4 API server unreachable" in text and "5 forbidden" in text


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_examples_and_every_flag_a_help(verb):
    text = help_text(verb)
    assert "examples:" in text and f"homecluster {verb}" in text.split("examples:")[1]
    full = cli.parser("*", cli.commands())
    sub = next(a for a in full._actions if a.dest == "command").choices[verb]
    for action in sub._actions:
        assert action.help and len(action.help) > 10, (verb, action.option_strings, action.help)


def test_each_model_setting_flag_says_what_it_bounds():
    text = re.sub(r"\s+", " ", help_text("run"))
    assert "model setting" not in text
    for name in Settings.names():
        flag = "--" + name.replace("_", "-")
        described = text.split(f"{flag} {name.upper()} ")[1].split(" [env")[0]
        assert len(described) > 40 and "(default " in described, (flag, described)
    assert "how long one startup Job may run before the attempt fails (default 5m)" in text
