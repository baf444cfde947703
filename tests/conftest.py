"""Test-run settings shared by the whole suite.

Under CI (``CI`` set, as ``.ci/run`` runs), hypothesis draws the same examples on every run
(``derandomize``): a submission is judged on what its author ran, and a new counterexample
is found by developers' runs, which keep exploring at random.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
