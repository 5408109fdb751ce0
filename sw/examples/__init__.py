"""Example SME programs shipped with zatile."""
