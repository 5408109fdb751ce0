"""zatile sim package."""
