"""Communities and the reports a local model writes for them."""
