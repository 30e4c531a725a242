"""docs/cli.md's exit-code table is what the CLI does: each kind of failure a verb ends with (clikube.error_line)
exits with the code whose row describes it, the table lists each code once, and `homecluster --help` repeats
the same codes with the same meanings. A script written from the docs tells failed, timed out, unreachable and
forbidden apart as the CLI does."""
from __future__ import annotations

import re

import aiohttp

from homecluster import cli, clikube
from homecluster.kube import client as kube
from homecluster.kube.kubeconfig import KubeconfigError
from install_helpers import REPO

DOC = REPO / "docs" / "cli.md"


def table() -> dict[int, tuple[str, str]]:
    """code -> (meaning, examples) from the `## Exit codes` table of docs/cli.md."""
    text = DOC.read_text()
    section = text[text.index("## Exit codes"):]
    section = section[:section.index("\n## ", 3)]
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \| (.+) \|$", section, re.M)
    codes = [int(code) for code, _, _ in rows]
    assert len(codes) == len(set(codes)), f"docs/cli.md lists an exit code twice: {codes}"
    return {int(code): (meaning.strip(), examples) for code, meaning, examples in rows}


# one failure of each kind a verb can end with, and words its row of the table must hold
FAILURES = [
    (KubeconfigError("/home/me/.kube/config: not YAML"), ("usage", "kubeconfig")),
    (clikube.MissingKind(kube.CLAIMS), ("failed", "CRDs are not installed")),
    (aiohttp.ClientConnectionError("connection refused"), ("unreachable", "no answer from the API server")),
    (TimeoutError(), ("unreachable", "no answer in time")),
    (kube.ApiError(401, "Unauthorized", "", "list nodeclaims"), ("forbidden", "401")),
    (kube.ApiError(403, "Forbidden", "", "list nodeclaims"), ("forbidden", "403")),
    (kube.ApiError(422, "Unprocessable Entity", "bad", "create nodeclaims"), ("failed", "refused the value")),
]


def test_every_failure_exits_with_the_code_whose_row_describes_it():
    rows = table()
    for exc, (meaning, example) in FAILURES:
        code, line = clikube.error_line(exc)
        assert line.startswith("error: ") and "\n" not in line, line
        assert code in rows, f"{type(exc).__name__} exits {code}, which docs/cli.md does not list"
        assert rows[code][0].startswith(meaning), f"{type(exc).__name__} exits {code}: docs/cli.md says {rows[code]}"
        assert example in rows[code][1], f"docs/cli.md's row {code} does not name {example!r}: {rows[code][1]}"


def test_the_table_lists_exactly_the_codes_the_cli_has_and_the_help_agrees():
    rows = table()
    constants = {name: getattr(clikube, name) for name in ("OK", "FAILED", "USAGE", "TIMED_OUT", "UNREACHABLE",
                                                           "FORBIDDEN")}
    assert set(rows) == set(constants.values()), f"docs/cli.md lists {sorted(rows)}, the CLI has {constants}"
    for name, code in constants.items():
        assert rows[code][0].startswith(name.lower().replace("_", " ").replace("ok", "done")), (name, rows[code])
    epilog = " ".join(cli.EPILOG.split("exit codes:")[1].split())
    said = dict(re.findall(r"(\d) ([A-Za-z][A-Za-z ]+?)(?:[,(;]|$)", epilog))
    assert {int(code) for code in said} == set(rows), f"--help lists {said}"
    for code, words in said.items():
        assert rows[int(code)][0].split()[0] in words.split(), (code, words, rows[int(code)])
