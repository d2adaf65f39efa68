"""Extractors turn chunks into typed entity and relation mentions behind one small contract."""

from .base import Extractor, available_extractors, make_extractor, register_extractor

__all__ = ["Extractor", "available_extractors", "make_extractor", "register_extractor"]
