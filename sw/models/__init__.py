"""Models that run end to end on the engine through :mod:`zatile.sw.ops`."""
