"""In-process emulators of the external services memctl talks to, for its tests."""
