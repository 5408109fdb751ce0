"""zatile hw package."""
