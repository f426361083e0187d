"""Tools built on the engine's public API: check, debugging tools, input/output files, generate."""
