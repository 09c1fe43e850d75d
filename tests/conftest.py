"""Shared test setup: Hypothesis profiles and the location of ../shared/data."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.register_profile("ci", max_examples=150, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; skips the test cleanly when it is absent (a fresh machine)."""
    if not DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return DATA

# matplotlib draws without a display (benchmarks/plots.py in tests; notebook kernels select
# their inline backend themselves)
os.environ.setdefault("MPLBACKEND", "Agg")
