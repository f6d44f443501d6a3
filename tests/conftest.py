import os
import tempfile
from pathlib import Path

import pytest

from gateway.policy.lexicon_cache import ENV_VAR


def pytest_configure(config: pytest.Config) -> None:
    # Every gateway and CLI process the suite starts (well over a hundred) reads the lexicon from the
    # opt-in cache instead of building it: the build is most of a start, several times slower under
    # coverage. The first build (at collection, in this process) writes it. tests/unit/test_lexicon_cache.py
    # checks that a lexicon read back is the one built.
    folder = Path(tempfile.gettempdir()) / f"elicitation-gateway-lexicon-{os.getuid()}"
    os.environ.setdefault(ENV_VAR, str(folder))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
