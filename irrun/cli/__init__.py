"""The `irrun` command: one module per command family."""
