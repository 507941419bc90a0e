"""A project's health, as `memctl status` reports it: stores, outboxes, capture, maintenance,
clients and, in stack mode, its bridge container."""

from ..operations._status import (
    collect,
    components,
    inventory_status,
    maintenance_status,
    problems,
    project_status,
)

__all__ = ["collect", "components", "inventory_status", "maintenance_status", "problems", "project_status"]
