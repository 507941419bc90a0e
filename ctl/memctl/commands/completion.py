"""`memctl completion bash|zsh|fish`: the shell completion script click generates for memctl."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")
PROG_NAME = "memctl"
COMPLETE_VAR = "_MEMCTL_COMPLETE"
"""The variable click's completion protocol reads when `memctl` itself is run."""


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script: commands, options and choices complete on Tab.

    Install it once, then open a new shell:

    \b
      bash  memctl completion bash > ~/.local/share/bash-completion/completions/memctl
            (needs the bash-completion package; or add to ~/.bashrc:
            eval "$(memctl completion bash)")
      zsh   memctl completion zsh > ~/.zfunc/_memctl
            (with `fpath+=~/.zfunc` before `compinit` in ~/.zshrc)
      fish  memctl completion fish > ~/.config/fish/completions/memctl.fish

    \b
    Example:
      memctl completion bash > ~/.local/share/bash-completion/completions/memctl
      eval "$(memctl completion zsh)"
    """
    complete = get_completion_class(shell)
    if complete is None:  # click knows every shell in SHELLS; a guard for type checkers
        raise click.BadParameter(f"no completion for {shell}", param_hint="SHELL")
    click.echo(complete(ctx.find_root().command, {}, PROG_NAME, COMPLETE_VAR).source())
