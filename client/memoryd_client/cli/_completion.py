"""``memctl completion bash|zsh|fish``: completion scripts written from the parser itself.

The commands, their options and the options' fixed choices come from walking argparse's
tree, so a command added to ``_parser.build_parser`` (or registered by another module) is
completed without touching this file. zsh loads the bash script through its own
``bashcompinit`` (part of zsh), which understands ``complete -F``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field


@dataclass
class Command:
    """One node of the command tree: ``()`` is memctl itself, ``("workspace", "add")`` one
    of its commands."""

    path: tuple[str, ...]
    help: str = ""
    options: list[tuple[list[str], str, list[str], bool]] = field(default_factory=list)
    positional_choices: list[str] = field(default_factory=list)
    children: dict[str, Command] = field(default_factory=dict)


def command_tree(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = ""
) -> Command:
    node = Command(path, help)
    helps: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, child in action.choices.items():
                node.children[name] = command_tree(child, (*path, name), helps.get(name, ""))
        elif action.option_strings:
            choices = [str(c) for c in action.choices or []]
            node.options.append(
                (list(action.option_strings), action.help or "", choices, action.nargs != 0)
            )
        elif action.choices:
            node.positional_choices.extend(str(c) for c in action.choices)
    return node


def _walk(node: Command) -> list[Command]:
    return [node, *(n for child in node.children.values() for n in _walk(child))]


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    tree = command_tree(parser)
    if shell == "fish":
        return _fish(tree)
    bash = _bash(tree)
    if shell == "zsh":
        return (
            "#compdef memctl\n# memctl completion for zsh, through zsh's bashcompinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + bash
        )
    return bash


def _bash(tree: Command) -> str:
    cases = []
    for node in _walk(tree):
        words = " ".join([*node.children, *node.positional_choices])
        flags_ = " ".join(flag for flags, *_ in node.options for flag in flags)
        value_cases = "".join(
            f"        {'|'.join(flags)}) COMPREPLY=($(compgen -W '{' '.join(choices)}' "
            f'-- "$cur")); return;;\n'
            for flags, _, choices, _ in node.options
            if choices
        )
        takes = [
            f for flags, _, choices, takes in node.options if takes and not choices for f in flags
        ]
        files = (
            f'        {"|".join(takes)}) COMPREPLY=($(compgen -f -- "$cur")); return;;\n'
            if takes
            else ""
        )
        cases.append(
            f"    '{' '.join(node.path)}')\n"
            f'      case "$prev" in\n{value_cases}{files}      esac\n'
            f"      if [[ \"$cur\" == -* ]]; then words='{flags_}'; else words='{words}'; fi\n"
            f'      COMPREPLY=($(compgen -W "$words" -- "$cur"));;\n'
        )
    keys = "|".join(" ".join(n.path) for n in _walk(tree))
    return (
        '# memctl completion for bash: eval "$(memctl completion bash)"\n'
        "_memctl() {\n"
        '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"\n'
        f"  local keys='|{keys}|' path='' next i words\n"
        "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
        '    [[ "${COMP_WORDS[i]}" == -* ]] && continue\n'
        '    next="${path:+$path }${COMP_WORDS[i]}"\n'
        '    [[ "$keys" == *"|$next|"* ]] && path="$next"\n'
        "  done\n"
        '  case "$path" in\n' + "".join(cases) + "  esac\n"
        "}\n"
        "complete -o default -F _memctl memctl\n"
    )


def _fish(tree: Command) -> str:
    lines = [
        "# memctl completion for fish: memctl completion fish > "
        "~/.config/fish/completions/memctl.fish",
        "complete -c memctl -f",
    ]
    for node in _walk(tree):
        if not node.path:
            cond = "__fish_use_subcommand"
        elif len(node.path) == 1:
            others = " ".join(node.children) or "''"
            cond = (
                f"__fish_seen_subcommand_from {node.path[0]}; and not "
                f"__fish_seen_subcommand_from {others}"
            )
        else:
            cond = (
                f"__fish_seen_subcommand_from {node.path[0]}; and "
                f"__fish_seen_subcommand_from {node.path[-1]}"
            )
        for name, child in node.children.items():
            lines.append(f"complete -c memctl -n '{cond}' -a {name} -d {_quote(child.help)}")
        if node.positional_choices:
            lines.append(
                f"complete -c memctl -n '{cond}' -a {_quote(' '.join(node.positional_choices))}"
            )
        for flags, help, choices, takes in node.options:
            spec = " ".join(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}" for f in flags)
            value = f" -x -a {_quote(' '.join(choices))}" if choices else " -r -F" if takes else ""
            lines.append(f"complete -c memctl -n '{cond}' {spec}{value} -d {_quote(help)}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
