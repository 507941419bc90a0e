"""Provisioning, what `memctl up`, `down` and `upgrade` do: the inventory and the role options,
the playbook run, the wheel for remote machines, the project registry and record, each AI
client's files (their JSON, TOML and YAML merges, the launcher) and the proofs that a project's
memory starts and answers."""
