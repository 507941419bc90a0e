"""`memctl logs`: a project's bridge container, capture and playbook run logs, secrets redacted."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape

from memory_bridge import NotFound

from ..operations._logs import SOURCES, follow, gather
from ..provision._project import current_project
from ._options import project_option
from ._output import console, emit_json, json_option
from ._runs import registered_project


@click.command()
@project_option
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Choice(SOURCES),
    help="Only this source (repeatable; default: all of bridge, capture, runs).",
)
@click.option(
    "--lines",
    "-n",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="How many of the last lines of each source to show.",
)
@click.option(
    "--follow",
    "-f",
    "follow_",
    is_flag=True,
    help="Then keep printing new lines (the bridge container's, else the capture log's) until Ctrl-C.",
)
@json_option
def logs(project: Path | None, sources: tuple[str, ...], lines: int, follow_: bool, as_json: bool) -> None:
    """Show a project's logs: its bridge container, capture, and memctl's playbook runs.

    Sources: `bridge`, the output of a stack project's bridge container (docker logs);
    `capture`, the capture pipeline's log (.memory/capture/capture.log) and, when the
    worker wrote any, its errors; `runs`, the newest playbook run log (memctl up,
    upgrade, down, migrate) that names the project. Every line is passed through the
    bridge's secret redactor before it is printed. With --json, one object with the
    lines of each source; with --follow --json, one JSON object per new line.

    Exit code 0; 3 when none of the chosen sources has any log yet.

    \b
    Example:
      memctl logs
      memctl logs --project ~/src/app --source bridge --follow
      memctl logs --lines 200 --json
    """
    directory = current_project(project)
    chosen = registered_project(directory)
    found = gather(chosen, sources or SOURCES, lines)
    if not found and not follow_:
        raise NotFound(f"no logs yet for {directory} (sources: {', '.join(sources or SOURCES)})")
    with_bridge = any(s["source"] == "bridge" and not s.get("error") for s in found)
    follower = follow(chosen, with_bridge) if follow_ else None
    if as_json and not follow_:
        payload = {"ok": True, "project": str(directory), "slug": chosen.slug, "lines": lines}
        emit_json({**payload, "sources": found})
        return
    for source in found:
        if as_json:
            for line in source["lines"]:
                click.echo(json.dumps({"source": source["source"], "line": line}))
            continue
        console.rule(f"{source['source']}: {source.get('name') or source.get('path')}", align="left")
        if source.get("error"):
            console.print(f"[yellow]{escape(source['error'])}[/]")
        for line in source["lines"]:
            console.print(line, markup=False, highlight=False)
    if follower is not None:
        try:
            for name, line in follower:
                if as_json:
                    click.echo(json.dumps({"source": name, "line": line}))
                else:
                    console.print(line, markup=False, highlight=False)
        except KeyboardInterrupt:
            pass
