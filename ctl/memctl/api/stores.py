"""The embedded stores' schema versions and their migration, and a round trip through the
bridge that proves a project's memory answers."""

from ..provision._smoke import round_trip
from ..provision._stores import StoreState, embedded_states, prepare_stores

__all__ = ["StoreState", "embedded_states", "prepare_stores", "round_trip"]
