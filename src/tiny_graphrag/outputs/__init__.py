"""Ways out of an index: exports, GraphRAG's tables, the offline view and notebook display."""
