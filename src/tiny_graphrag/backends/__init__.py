"""Model backends: the LLM contract and llama.cpp, embedders, model files on disk."""
