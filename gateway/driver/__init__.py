"""The session driver: carries out the core's commands (no HTTP in here)."""
