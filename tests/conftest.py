import os

from hypothesis import HealthCheck, settings

# The first example of a property test pays for JIT compilation, so no deadline.
settings.register_profile("fedcore", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=40, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("FEDCORE_HYPOTHESIS_PROFILE", "fedcore"))

