"""Hypothesis settings for the generated reliability tests.

``HYPOTHESIS_PROFILE`` picks one: ``ci`` (the default: 400 examples per property, so that
``.ci/run``, which runs the suite twice, stays within its time on two cores), ``thorough`` (5,000,
opt-in), or ``dev`` (50, for a quick local run). The settings are applied to the
reliability properties only, so other property tests keep Hypothesis's defaults but its deadline,
which no test of the suite has (tests/conftest.py loads the ``suite`` profile).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "property_settings"]

for _name, _examples in (("ci", 400), ("thorough", 5_000), ("dev", 50)):
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,  # examples use real (tiny) sleeps and threads; timings vary on a loaded CI box
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )

_NAME = os.environ.get("HYPOTHESIS_PROFILE", "ci")
PROFILE = _NAME if _NAME in ("ci", "thorough", "dev") else "ci"

property_settings = settings(settings.get_profile(PROFILE))
"""Decorate a ``@given`` test with this to run it under the chosen profile."""
