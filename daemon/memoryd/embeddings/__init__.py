"""Embedding providers: ``local`` (bundled ONNX model), ``openai`` (any compatible
endpoint), or none (keyword search only)."""
