"""zatile sw package."""
