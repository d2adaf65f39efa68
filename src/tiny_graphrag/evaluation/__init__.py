"""GraphRAG's head-to-head evaluation of answers by a judge model."""
