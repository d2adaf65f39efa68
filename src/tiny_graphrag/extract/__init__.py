"""Extractors turn chunks into typed entity and relation mentions behind one small contract."""

from tiny_graphrag.extract.base import Extractor, extractor_names, make_extractor, register_extractor

__all__ = ["Extractor", "extractor_names", "make_extractor", "register_extractor"]
