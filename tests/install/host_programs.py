"""Find every host program the project runs: its Python code, its Ansible tasks, its Makefile and scripts.

`programs()` returns {program: [where, ...]}. It reads the source, never runs it:
- Python (ast): the program of each subprocess.run/Popen/check_output/check_call/call,
  asyncio.create_subprocess_exec, os.exec*/spawn* and shutil.which call. A string literal, a module
  constant (QEMU = "qemu-system-x86_64", also imported from another scanned file), a list whose first
  item is one of these, a local variable assigned such a list or `shutil.which("x")`, `sys.executable`
  (Python) and `<venv>/bin/x` are understood. Any other program expression is a call site that
  `INDIRECT` in test_system_deps.py must name, with the programs it runs.
- Ansible YAML: the first word of every ansible.builtin.command/shell task (`argv`, `cmd` or the
  free form) in roles/, playbooks/ and molecule/.
- Makefile recipes and scripts/*.sh: the first word of every simple command.
"""
from __future__ import annotations

import ast
import re
import shlex
from collections import defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIRS = ("controller", "lab", "plugins", "roles", "playbooks", "tests", "scripts", "molecule")
YAML_DIRS = ("roles", "playbooks", "molecule")
PYTHON = "@python"  # sys.executable: the venv's interpreter
VENV_PREFIX = "@venv/"  # a program of the venv's bin/ (ansible-playbook, molecule, ...)

_SUBPROCESS = {"run", "Popen", "check_output", "check_call", "call"}
_EXEC_PREFIXES = ("exec", "spawn")


def _callee(node: ast.Call) -> str:
    """`subprocess.run` -> "subprocess.run"; `create_subprocess_exec` -> "create_subprocess_exec"."""
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _program_arg(node: ast.Call):
    """The expression naming the program of a process-starting call, or None if the call starts none."""
    name = _callee(node)
    last = name.rsplit(".", 1)[-1]
    first = node.args[0] if node.args else None
    if name in ("shutil.which", "which") or last == "create_subprocess_exec" or (
            name.startswith("os.") and last.startswith(_EXEC_PREFIXES)):
        if name.startswith("os.spawn") and len(node.args) > 1:
            return node.args[1]  # os.spawnv(mode, path, args)
        return first
    if name.startswith("subprocess.") and last in _SUBPROCESS:
        for kw in node.keywords:
            if kw.arg == "args":
                first = kw.value
        if isinstance(first, (ast.List, ast.Tuple)):
            return first.elts[0] if first.elts else None
        return first
    return None


class _FileScan(ast.NodeVisitor):
    """One Python file: resolvable programs, and the call sites it could not resolve."""

    def __init__(self, constants: dict[str, str]) -> None:
        self.constants = constants
        self.scope: list[ast.AST] = []
        self.found: list[tuple[str, int]] = []
        self.unresolved: list[tuple[str, int]] = []  # (qualified function name, line)

    def _qualname(self) -> str:
        return ".".join(n.name for n in self.scope) or "<module>"

    def _visit_scope(self, node) -> None:
        self.scope.append(node)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope

    def _local(self, name: str):
        """The value first assigned to `name` in the enclosing function (a list, a literal or which())."""
        for scope in reversed(self.scope):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(scope):
                    if isinstance(node, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == name for t in node.targets):
                        return node.value
                return None
        return None

    def resolve(self, expr, depth: int = 0):
        if expr is None or depth > 3:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return expr.value.split()[0] if expr.value.strip() else None
        if isinstance(expr, ast.Attribute) and ast.unparse(expr) == "sys.executable":
            return PYTHON
        if isinstance(expr, ast.Name):
            if expr.id in self.constants:
                return self.constants[expr.id]
            value = self._local(expr.id)
            if isinstance(value, (ast.List, ast.Tuple)):
                return self.resolve(value.elts[0] if value.elts else None, depth + 1)
            if isinstance(value, ast.Call) and _callee(value) in ("shutil.which", "which"):
                return self.resolve(value.args[0] if value.args else None, depth + 1)
            return self.resolve(value, depth + 1) if isinstance(value, ast.Constant) else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):  # argv + [more, args]
            return self.resolve(expr.left, depth + 1)
        # str(VENV_BIN / "molecule") and VENV_BIN / "molecule"
        if isinstance(expr, ast.Call) and _callee(expr) == "str" and expr.args:
            return self.resolve(expr.args[0], depth + 1)
        if (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div) and isinstance(expr.left, ast.Name)
                and expr.left.id == "VENV_BIN" and isinstance(expr.right, ast.Constant)):
            return VENV_PREFIX + expr.right.value
        return None

    def visit_Call(self, node: ast.Call) -> None:
        arg = _program_arg(node)
        if arg is not None or _callee(node).endswith("create_subprocess_exec"):
            program = None if isinstance(arg, ast.Starred) else self.resolve(arg)
            if program is None:
                self.unresolved.append((self._qualname(), node.lineno))
            else:
                self.found.append((program, node.lineno))
        self.generic_visit(node)


def _python_files() -> list[Path]:
    files = []
    for top in PYTHON_DIRS:
        files += [p for p in sorted((REPO / top).rglob("*.py")) if ".venv" not in p.parts]
    return files


def _module_constants(trees: dict[Path, ast.Module]) -> dict[str, str]:
    """NAME = "program" at module level, in any scanned file (the names are unique enough; a clash is dropped)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for tree in trees.values():
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.isupper()):
                continue
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and re.fullmatch(r"[\w./+-]+",
                                                                                              value.value):
                seen[node.targets[0].id].add(value.value)
            elif (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div) and isinstance(value.right, ast.Constant)
                  and ast.unparse(value.left) in ("VENV_BIN", "Path(sys.executable).parent")):
                seen[node.targets[0].id].add(VENV_PREFIX + value.right.value)  # HOMECLUSTER = VENV_BIN / "homecluster"
    return {name: values.pop() for name, values in seen.items() if len(values) == 1}


def scan_python() -> tuple[dict[str, list[str]], dict[tuple[str, str], list[int]]]:
    """({program: [path:line]}, {(path, function): [lines]} of call sites whose program is not literal)."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in _python_files()}
    constants = _module_constants(trees)
    found: dict[str, list[str]] = defaultdict(list)
    unresolved: dict[tuple[str, str], list[int]] = defaultdict(list)
    for path, tree in trees.items():
        scan = _FileScan(constants)
        scan.visit(tree)
        rel = str(path.relative_to(REPO))
        for program, line in scan.found:
            found[program].append(f"{rel}:{line}")
        for function, line in scan.unresolved:
            unresolved[(rel, function)].append(line)
    return found, unresolved


def _tasks(node):
    """Every mapping that looks like a task (recursing through plays, blocks and lists)."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for value in node.values():
            if isinstance(value, (list, dict)):
                yield from _tasks(value)


def scan_yaml() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for top in YAML_DIRS:
        for path in sorted((REPO / top).rglob("*.yml")):
            try:
                docs = list(yaml.safe_load_all(path.read_text()))
            except yaml.YAMLError:
                continue
            for task in _tasks(docs):
                for key in ("ansible.builtin.command", "command", "ansible.builtin.shell", "shell"):
                    spec = task.get(key)
                    if "name" not in task or spec is None:
                        continue
                    if isinstance(spec, dict):
                        words = spec.get("argv") or shlex.split(str(spec.get("cmd", "")))
                    else:
                        words = shlex.split(str(spec))
                    if words and "{{" not in str(words[0]):
                        found[str(words[0])].append(str(path.relative_to(REPO)))
    return found


_SHELL_WORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "in",
                "!", "{", "}", "[", "[[", "test", "echo", "printf", "exit", "return", "set", "export", "local",
                "command", "cd", "read", "true", "false", "shift", "continue", "break", "source", ".", "trap", "wait", "exec", "eval"}
_PREFIX_WORDS = {"!", "if", "then", "else", "elif", "do", "while", "until", "exec", "time"}
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")


def shell_programs(text: str) -> list[str]:
    """First words of the simple commands in shell text, command substitutions included (comments,
    keywords, builtins, assignments and calls of the text's own shell functions dropped); `$SUDO x` runs sudo
    and x."""
    text = text.replace("\\\n", " ")
    functions = set(re.findall(r"^\s*([\w-]+)\s*\(\)\s*\{", text, re.M))
    inner = []
    while _SUBSTITUTION.search(text):
        inner += _SUBSTITUTION.findall(text)
        text = _SUBSTITUTION.sub("SUBST", text)
    programs = []
    for line in text.splitlines() + inner:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.commenters = "#"
        lexer.wordchars += "$-./+=:@%,[]{}*~^"
        try:
            tokens = list(lexer)
        except ValueError:  # an unfinished quote: a multi-line string the scan does not follow
            continue
        command: list[str] = []
        for token in tokens + [";"]:
            if token and set(token) <= set(";&|()<>"):
                if command:
                    programs += [p for p in _first_program(command) if p not in functions]
                command = []
                if token in (">", ">>", "<", ">&", "<&"):
                    command = ["REDIRECT"]  # the next word is a file, not a program
            else:
                command.append(token)
    return programs


def _first_program(words: list[str]) -> list[str]:
    while words and (words[0] in _PREFIX_WORDS or re.match(r"^\w+(\[\w@]*\])?\+?=", words[0])
                     or words[0] == "REDIRECT" or words[0].isdigit()):
        words = words[2:] if words[0] == "REDIRECT" else words[1:]
    found = []
    if words and words[0] == "$SUDO":
        found.append("sudo")
        words = words[1:]
    if words and words[0] not in _SHELL_WORDS and re.fullmatch(r"[\w./@+-]+", words[0]):
        found.append(words[0])
    return found


def scan_shell() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted((REPO / "scripts").glob("*.sh")):
        for program in shell_programs(path.read_text()):
            found[program].append(str(path.relative_to(REPO)))
    for line in (REPO / "Makefile").read_text().splitlines():
        if not line.startswith("\t"):
            continue  # only recipe lines run programs
        line = line[1:].lstrip("@-").replace("$(BIN)/", VENV_PREFIX).replace("$(PYTHON)", "python3")
        while re.search(r"\$\([^()]*\)|\$[@<^]", line):
            line = re.sub(r"\$\([^()]*\)|\$[@<^]", "MAKEVAR", line)  # make's own variables, not commands
        for program in shell_programs(line):
            found[program].append("Makefile")
    return found


def programs() -> tuple[dict[str, list[str]], dict[tuple[str, str], list[int]]]:
    """All programs found, by name, with where each is run; and the unresolved Python call sites."""
    found, unresolved = scan_python()
    for extra in (scan_yaml(), scan_shell()):
        for program, where in extra.items():
            found[program].extend(where)
    return dict(found), dict(unresolved)
