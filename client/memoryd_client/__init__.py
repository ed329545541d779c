"""Thin client for the memoryd daemon. Imports nothing heavy: no memoryd, SQLite or models."""

from memoryd_client.protocol import PROTOCOL_VERSION, ErrorCode

__all__ = ["PROTOCOL_VERSION", "ErrorCode"]
