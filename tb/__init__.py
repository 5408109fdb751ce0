"""zatile tb package."""
