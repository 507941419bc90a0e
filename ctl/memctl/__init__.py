"""memctl: the control plane of project memory for AI coding agents.

One folder per plane, each importing only those below it (docs/architecture.md draws the map):
`cli.py` and `commands/` (the CLI), `ui/` (the web view), `api/` (the public service API),
`operations/` (day-2: doctor, status, logs, maintenance) beside `transfer/` (memory as markdown
files), `capture/` (the hooks' pipeline) beside `provision/` (up, down, upgrade), and at the
root what every plane shares: `_errors`, `_timefmt`, `_refs`.
"""

import os as _os
import sys as _sys

__all__: list[str] = []

# `memctl hook <event>` runs at every agent lifecycle event and must answer within a few
# hundred milliseconds, so the installed `memctl` script answers it here, before click and
# the CLI load (bench/hooks.py: about 30 ms saved). `--help` still goes through the CLI.
if (
    _os.path.basename(_sys.argv[0]) == "memctl"
    and _sys.argv[1:2] == ["hook"]
    and not {"-h", "--help"} & set(_sys.argv[2:])
):
    from .capture._front import main as _hook

    _sys.exit(_hook(_sys.argv[2:]))
