"""Embedding providers: ``local`` (bundled ONNX model), ``openai`` (any compatible endpoint), ``none``."""
