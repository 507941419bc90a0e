"""An in-memory emulator of Dify's Knowledge (dataset) Service API and its onboarding console.

`create_app()` returns a Starlette app; `app.state.dify` is the `DifyState` that tests
inspect and poke (API keys, datasets, documents, the clock, outages).
"""

from .app import create_app
from .state import DifyState

__all__ = ["DifyState", "create_app"]
