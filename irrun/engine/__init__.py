"""The engine: bind a graph, fold constants, plan and run a model (Model, Session, the loader)."""
