"""`homecluster completion bash|zsh|fish`: tab completion generated from the command's own argparse parser.

Nothing is written by hand per command: the script lists every subcommand with its help, every flag of
each with its help, the choices of a flag that has them (`-o json|yaml|...`) and completes file names
after flags that take a file. A new flag is in the completion the moment it is in the parser.

    source <(homecluster completion bash)                      # this shell; add it to ~/.bashrc to keep it
    homecluster completion zsh > "${fpath[1]}/_homecluster"     # zsh, then start a new shell
    homecluster completion fish > ~/.config/fish/completions/homecluster.fish
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

SHELLS = ("bash", "zsh", "fish")
FILE_FLAG = re.compile(r"(kubeconfig|cert|key|ca|file|dir|path)$")  # flags whose value is a path


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...]
    is_file: bool


def _short(text: str | None) -> str:
    """One line of help, no characters the shells' quoting treats specially."""
    line = re.sub(r"\s+", " ", (text or "").replace("%%", "%")).strip()
    line = re.sub(r"[\[\]:'\"`$\\]", "", line)
    return line[:77] + "..." if len(line) > 80 else line


def flags(parser: argparse.ArgumentParser) -> list[Flag]:
    found = []
    for action in parser._actions:  # noqa: SLF001 - argparse has no public walk of its actions
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        takes = action.nargs != 0
        long = next((o for o in action.option_strings if o.startswith("--")), "")
        found.append(Flag(tuple(action.option_strings), _short(action.help), takes,
                          tuple(str(c) for c in action.choices or ()),
                          takes and not action.choices and bool(FILE_FLAG.search(long))))
    return found


def positionals(parser: argparse.ArgumentParser) -> list[tuple[str, tuple[str, ...]]]:
    """(name, choices) of each positional argument, in order (a slot name, a shell)."""
    return [(str(a.metavar or a.dest), tuple(str(c) for c in a.choices or ()))
            for a in parser._actions if not a.option_strings  # noqa: SLF001
            and not isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001


def commands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, list[Flag], list[tuple[str, tuple]]]]:
    """subcommand -> (its help, its flags, its positionals), in the parser's order."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    helps = {c.dest: _short(c.help) for c in sub._choices_actions}  # noqa: SLF001
    return {name: (helps.get(name, ""), flags(p), positionals(p)) for name, p in sub.choices.items()}


def bash(parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    top = " ".join([*cmds, *(o for f in flags(parser) for o in f.names)])
    cases = []
    for name, (_, fl, places) in cmds.items():
        values = [f'{"|".join(f.names)}) COMPREPLY=($(compgen -W "{" ".join(f.choices)}" -- "$cur")); return;;'
                  for f in fl if f.choices]
        values += [f'{"|".join(f.names)}) COMPREPLY=($(compgen -f -- "$cur")); return;;' for f in fl if f.is_file]
        values += [f'{"|".join(f.names)}) return;;' for f in fl if f.takes_value and not f.choices and not f.is_file]
        options = " ".join([*(c for _, choices in places for c in choices), *(o for f in fl for o in f.names)])
        inner = "\n          ".join(values)
        cases.append(f'    {name})\n      case "$prev" in\n          {inner}\n      esac\n'
                     f'      COMPREPLY=($(compgen -W "{options}" -- "$cur"));;' if values else
                     f'    {name}) COMPREPLY=($(compgen -W "{options}" -- "$cur"));;')
    body = "\n".join(cases)
    return f"""# bash completion for homecluster (homecluster completion bash)
_homecluster() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd="${{COMP_WORDS[i]}}"; break;; esac
  done
  case "$cmd" in
    "") COMPREPLY=($(compgen -W "{top}" -- "$cur"));;
{body}
  esac
}}
complete -o default -F _homecluster homecluster
"""


def _zsh_spec(f: Flag) -> str:
    names = f.names[0] if len(f.names) == 1 else "{" + ",".join(f.names) + "}"
    exclusive = f"'({' '.join(f.names)})'" if len(f.names) > 1 else ""
    value = ""
    if f.choices:
        value = f":value:({' '.join(f.choices)})"
    elif f.is_file:
        value = ":file:_files"
    elif f.takes_value:
        value = ":value: "
    return f"{exclusive}{names}'[{f.help}]{value}'"


def _zsh_places(places: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    return [f"'{i}:{_short(name)}:({' '.join(choices)})'" if choices else f"'{i}:{_short(name)}: '"
            for i, (name, choices) in enumerate(places, 1)]


def zsh(parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    described = "\n    ".join(f"'{name}:{text}'" for name, (text, _, _) in cmds.items())
    cases = "\n".join(f"    {name}) _arguments {' '.join([*map(_zsh_spec, fl), *_zsh_places(places)])};;"
                      for name, (_, fl, places) in cmds.items())
    return f"""#compdef homecluster
# zsh completion for homecluster (homecluster completion zsh)
_homecluster() {{
  local -a commands
  commands=(
    {described}
  )
  if (( CURRENT == 2 )); then
    _describe -t commands 'homecluster command' commands
    _arguments '--version[print the version]' '(-h --help)'{{-h,--help}}'[show help]'
    return
  fi
  local cmd=$words[2]
  shift words; (( CURRENT-- ))
  case $cmd in
{cases}
  esac
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _homecluster "$@"; else compdef _homecluster homecluster; fi
"""


def fish(parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    lines = ["# fish completion for homecluster (homecluster completion fish)", "complete -c homecluster -f",
             "complete -c homecluster -n __fish_use_subcommand -l version -d 'print the version'"]
    for name, (text, fl, places) in cmds.items():
        lines.append(f"complete -c homecluster -n __fish_use_subcommand -a {name} -d '{text}'")
        for _, choices in places:
            if choices:
                lines.append(f"complete -c homecluster -n '__fish_seen_subcommand_from {name}' -a '{' '.join(choices)}'")
        for f in fl:
            opts = " ".join(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}" for o in f.names)
            value = f" -xa '{' '.join(f.choices)}'" if f.choices else " -rF" if f.is_file else " -x" if f.takes_value \
                else ""
            lines.append(f"complete -c homecluster -n '__fish_seen_subcommand_from {name}' {opts}{value} -d '{f.help}'")
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "examples:\n" + __doc__.split("\n\n")[-1].rstrip()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("shell", choices=SHELLS, help="the shell to print the script for")


def run(args: argparse.Namespace) -> int:
    sys.stdout.write({"bash": bash, "zsh": zsh, "fish": fish}[args.shell](args.parser))
    return 0
