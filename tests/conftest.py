import os

import pytest
from hypothesis import HealthCheck, settings

# The first example of a property test pays for JIT compilation, so no deadline.
settings.register_profile("fedcore", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=40, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("FEDCORE_HYPOTHESIS_PROFILE", "fedcore"))


def pytest_collection_modifyitems(config, items):
    # Under pytest-xdist (``--dist loadgroup``), the Flower tests run one after another on one
    # worker: each starts and stops a Ray instance of its own, and two never run at once.
    flower = os.path.join("tests", "integrations", "flower") + os.sep
    for item in items:
        if flower in str(item.fspath):
            item.add_marker(pytest.mark.xdist_group("flower"))
