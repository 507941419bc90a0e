"""memctl: the control plane of project memory for AI coding agents."""

__all__: list[str] = []
