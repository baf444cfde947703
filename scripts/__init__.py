"""Development tools of this repository (not shipped in the wheel): run from a checkout."""
