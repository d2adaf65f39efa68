"""Building an index: documents, chunks, extraction, entity resolution, updates and RAPTOR trees."""
