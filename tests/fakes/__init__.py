"""Fakes at the boundaries (STYLE.md): real servers that speak the protocols memoryd talks to.

Import the module you need (``fakes.openai_server``); this package imports nothing, so a fake
for one protocol never drags in another's dependencies.
"""
