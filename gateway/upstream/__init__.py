"""upstream."""
