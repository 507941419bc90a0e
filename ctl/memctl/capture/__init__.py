"""The capture pipeline: lifecycle hooks distil sessions into typed atoms, a daily
compile merges them into knowledge and lessons, approved plans are kept.

`memctl hook` must answer within a few hundred milliseconds, so this package and its
hook front (`_front`, `_paths`, `_lock`, `_log`) import only the standard library; the
worker (`_worker`) does the heavy lifting in a detached process.
"""

__all__: list[str] = []
