"""The index on disk: its store, the graph, atomic placement and the model-call cache."""
