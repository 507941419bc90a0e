"""memctl's public service API: what the CLI's commands, the web view and the `memctl.stack`
Ansible collection call, one module per concern.

Everything else in `memctl` is private (a leading underscore) and may change in any release;
outside the package, import from here (an import-linter contract in pyproject.toml checks it).
Each module imports only what its concern needs, so an Ansible task that edits settings does
not load the MCP client.

- `memctl.api.clients`: wire a project's AI clients to its memory and prove they start it.
- `memctl.api.project`: a project as the inventory declares it, and its `.memory/config.toml`.
- `memctl.api.status`: a project's health, as `memctl status` reports it.
- `memctl.api.stores`: the embedded stores' schema versions, their migration, a round trip.
"""
